#include <stddef.h>

/// The bytes malloc has handed out and not had back: glibc's mallinfo2 (every arena, and the
/// blocks mapped on their own); 0 where that is not there.
size_t switchboard_heap_in_use(void);
