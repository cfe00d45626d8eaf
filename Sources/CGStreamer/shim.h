// The GStreamer, GObject and libnice calls Swift cannot make directly: C macros (signal
// connection, type checks), variadic functions (signal emission, g_object_get/set) and a few
// walks over GstStructure values. Each is a small static inline function, so there is no C
// target to build; the header is compiled only where SwitchboardGStreamer imports it.
#ifndef SWITCHBOARD_CGSTREAMER_SHIM_H
#define SWITCHBOARD_CGSTREAMER_SHIM_H

#define GST_USE_UNSTABLE_API 1
#include <gst/gst.h>
#include <gst/sdp/sdp.h>
#include <gst/webrtc/webrtc.h>
#include <nice/agent.h>

// MARK: - signals

typedef void (*sb_element_callback)(GstElement *element, gpointer data);
typedef void (*sb_candidate_callback)(GstElement *element, guint mline, gchar *candidate, gpointer data);
typedef void (*sb_pad_callback)(GstElement *element, GstPad *pad, gpointer data);
typedef void (*sb_notify_callback)(GObject *object, GParamSpec *spec, gpointer data);

/// Connects `callback` to `signal`; `destroy` runs with `data` when the handler goes away.
static inline gulong sb_connect_element(gpointer instance, const char *signal, sb_element_callback callback,
                                        gpointer data, GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(callback), data, destroy, (GConnectFlags)0);
}

static inline gulong sb_connect_candidate(gpointer instance, sb_candidate_callback callback, gpointer data,
                                          GClosureNotify destroy) {
    return g_signal_connect_data(instance, "on-ice-candidate", G_CALLBACK(callback), data, destroy, (GConnectFlags)0);
}

static inline gulong sb_connect_pad(gpointer instance, const char *signal, sb_pad_callback callback, gpointer data,
                                    GClosureNotify destroy) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(callback), data, destroy, (GConnectFlags)0);
}

static inline gulong sb_connect_notify(gpointer instance, const char *detailed_signal, sb_notify_callback callback,
                                       gpointer data, GClosureNotify destroy) {
    return g_signal_connect_data(instance, detailed_signal, G_CALLBACK(callback), data, destroy, (GConnectFlags)0);
}

static inline void sb_disconnect(gpointer instance, gulong handler) {
    if (handler != 0 && g_signal_handler_is_connected(instance, handler)) g_signal_handler_disconnect(instance, handler);
}

// MARK: - webrtcbin actions

static inline void sb_webrtc_create_offer(GstElement *webrtc, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, "create-offer", NULL, promise);
}

static inline void sb_webrtc_create_answer(GstElement *webrtc, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, "create-answer", NULL, promise);
}

static inline void sb_webrtc_set_description(GstElement *webrtc, gboolean local, GstWebRTCSessionDescription *sdp,
                                             GstPromise *promise) {
    g_signal_emit_by_name(webrtc, local ? "set-local-description" : "set-remote-description", sdp, promise);
}

static inline void sb_webrtc_add_ice_candidate(GstElement *webrtc, guint mline, const char *candidate) {
    g_signal_emit_by_name(webrtc, "add-ice-candidate", mline, candidate);
}

static inline gboolean sb_webrtc_add_turn_server(GstElement *webrtc, const char *uri) {
    gboolean added = FALSE;
    g_signal_emit_by_name(webrtc, "add-turn-server", uri, &added);
    return added;
}

/// A transceiver for receiving (or sending) one m-line, with the caps it may use (a new reference).
static inline GstWebRTCRTPTransceiver *sb_webrtc_add_transceiver(GstElement *webrtc,
                                                                 GstWebRTCRTPTransceiverDirection direction,
                                                                 GstCaps *caps) {
    GstWebRTCRTPTransceiver *transceiver = NULL;
    g_signal_emit_by_name(webrtc, "add-transceiver", direction, caps, &transceiver);
    return transceiver;
}

static inline void sb_webrtc_get_stats(GstElement *webrtc, GstPromise *promise) {
    g_signal_emit_by_name(webrtc, "get-stats", NULL, promise);
}

/// Sets the shortest interval between RTCP reports of webrtcbin's RTP sessions that exist (ids
/// 0 to `sessions` - 1; with a bundle only 0); returns how many it set.
static inline guint sb_webrtc_set_rtcp_interval(GstElement *webrtc, guint sessions, guint64 nanoseconds) {
    GstElement *rtpbin = gst_bin_get_by_name(GST_BIN(webrtc), "rtpbin");
    if (rtpbin == NULL) return 0;
    guint set = 0;
    for (guint id = 0; id < sessions; id++) {
        GObject *session = NULL;
        g_signal_emit_by_name(rtpbin, "get-internal-session", id, &session);
        if (session == NULL) continue;
        g_object_set(session, "rtcp-min-interval", nanoseconds, NULL);
        g_object_unref(session);
        set++;
    }
    gst_object_unref(rtpbin);
    return set;
}

/// Sets up webrtcbin's libnice agent before it gathers: no UPnP port mappings (libnice asks the
/// network's router for them by default, which browsers never do), and, with `address`, host
/// candidates on that address only (tests keep ICE on 127.0.0.1; libnice gathers on the local
/// addresses added before gathering starts, on every interface when none was added).
static inline gboolean sb_webrtc_configure_agent(GstElement *webrtc, const char *address) {
    GObject *ice = NULL;
    NiceAgent *agent = NULL;
    g_object_get(webrtc, "ice-agent", &ice, NULL);
    if (ice == NULL) return FALSE;
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice), "agent") != NULL) g_object_get(ice, "agent", &agent, NULL);
    g_object_unref(ice);
    if (agent == NULL) return FALSE;
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(agent), "upnp") != NULL) g_object_set(agent, "upnp", FALSE, NULL);
    gboolean added = TRUE;
    if (address != NULL) {
        NiceAddress *nice_address = nice_address_new();
        added = nice_address_set_from_string(nice_address, address) && nice_agent_add_local_address(agent, nice_address);
        nice_address_free(nice_address);
    }
    g_object_unref(agent);
    return added;
}

// MARK: - properties

static inline gpointer sb_get_object(gpointer object, const char *name) {
    gpointer value = NULL;
    g_object_get(object, name, &value, NULL);
    return value;
}

/// A string property (free it with g_free).
static inline gchar *sb_get_string(gpointer object, const char *name) {
    gchar *value = NULL;
    g_object_get(object, name, &value, NULL);
    return value;
}

static inline gint sb_get_enum(gpointer object, const char *name) {
    gint value = 0;
    g_object_get(object, name, &value, NULL);
    return value;
}

/// A string field of a structure, or NULL (owned by the structure).
static inline const gchar *sb_structure_string(const GstStructure *structure, const char *field) {
    return gst_structure_has_field_typed(structure, field, G_TYPE_STRING) ? gst_structure_get_string(structure, field)
                                                                           : NULL;
}

static inline void sb_set_caps(gpointer object, const char *name, GstCaps *caps) {
    g_object_set(object, name, caps, NULL);
}

static inline void sb_set_bool(gpointer object, const char *name, gboolean value) {
    g_object_set(object, name, value, NULL);
}

static inline void sb_set_double(gpointer object, const char *name, gdouble value) {
    g_object_set(object, name, value, NULL);
}

static inline void sb_set_int(gpointer object, const char *name, gint value) {
    g_object_set(object, name, value, NULL);
}

static inline void sb_set_uint(gpointer object, const char *name, guint value) {
    g_object_set(object, name, value, NULL);
}

// MARK: - promises and structures

/// The session description in a create-offer/create-answer reply (a copy), or NULL.
static inline GstWebRTCSessionDescription *sb_reply_description(const GstStructure *reply, const char *field) {
    if (reply == NULL || !gst_structure_has_field_typed(reply, field, GST_TYPE_WEBRTC_SESSION_DESCRIPTION)) return NULL;
    GstWebRTCSessionDescription *description = NULL;
    gst_structure_get(reply, field, GST_TYPE_WEBRTC_SESSION_DESCRIPTION, &description, NULL);
    return description;
}

/// The message of an error in a promise reply (free it with g_free), or NULL.
static inline gchar *sb_reply_error(const GstStructure *reply) {
    if (reply == NULL || !gst_structure_has_field_typed(reply, "error", G_TYPE_ERROR)) return NULL;
    GError *error = NULL;
    gst_structure_get(reply, "error", G_TYPE_ERROR, &error, NULL);
    gchar *message = g_strdup(error != NULL ? error->message : "unknown error");
    g_clear_error(&error);
    return message;
}

/// The `index`th field of `structure` when it holds a structure (the stats of one object), else NULL.
static inline const GstStructure *sb_structure_nth_structure(const GstStructure *structure, guint index) {
    const gchar *name = gst_structure_nth_field_name(structure, index);
    if (name == NULL) return NULL;
    const GValue *value = gst_structure_get_value(structure, name);
    if (value == NULL || !GST_VALUE_HOLDS_STRUCTURE(value)) return NULL;
    return gst_value_get_structure(value);
}

/// A numeric field of any integer or floating type as a double; `fallback` when absent.
static inline gdouble sb_structure_number(const GstStructure *structure, const char *field, gdouble fallback) {
    const GValue *value = gst_structure_get_value(structure, field);
    if (value == NULL) return fallback;
    switch (G_VALUE_TYPE(value)) {
    case G_TYPE_INT: return g_value_get_int(value);
    case G_TYPE_UINT: return g_value_get_uint(value);
    case G_TYPE_INT64: return (gdouble)g_value_get_int64(value);
    case G_TYPE_UINT64: return (gdouble)g_value_get_uint64(value);
    case G_TYPE_DOUBLE: return g_value_get_double(value);
    case G_TYPE_FLOAT: return g_value_get_float(value);
    default: return fallback;
    }
}

/// The stats type of one stats structure (GstWebRTCStatsType), or -1.
static inline gint sb_stats_type(const GstStructure *structure) {
    GstWebRTCStatsType type;
    if (!gst_structure_get_enum(structure, "type", GST_TYPE_WEBRTC_STATS_TYPE, (gint *)&type)) return -1;
    return (gint)type;
}

/// The loudest channel's RMS in dB from a `level` element's message, or -200 when absent.
static inline gdouble sb_level_rms(const GstStructure *structure) {
    const GValue *rms = gst_structure_get_value(structure, "rms");
    if (rms == NULL) return -200;
    gdouble loudest = -200;
    if (GST_VALUE_HOLDS_ARRAY(rms)) {
        for (guint i = 0; i < gst_value_array_get_size(rms); i++) {
            const GValue *channel = gst_value_array_get_value(rms, i);
            if (G_VALUE_HOLDS_DOUBLE(channel) && g_value_get_double(channel) > loudest) loudest = g_value_get_double(channel);
        }
    } else if (G_VALUE_HOLDS(rms, G_TYPE_VALUE_ARRAY)) {
        G_GNUC_BEGIN_IGNORE_DEPRECATIONS
        GValueArray *array = (GValueArray *)g_value_get_boxed(rms);
        for (guint i = 0; array != NULL && i < array->n_values; i++) {
            const GValue *channel = g_value_array_get_nth(array, i);
            if (G_VALUE_HOLDS_DOUBLE(channel) && g_value_get_double(channel) > loudest) loudest = g_value_get_double(channel);
        }
        G_GNUC_END_IGNORE_DEPRECATIONS
    }
    return loudest;
}

// MARK: - events, messages, pads

/// Asks the encoder upstream for a key frame (what a receiver's PLI does).
static inline GstEvent *sb_force_key_unit_event(void) {
    return gst_event_new_custom(GST_EVENT_CUSTOM_UPSTREAM,
                                gst_structure_new("GstForceKeyUnit", "all-headers", G_TYPE_BOOLEAN, TRUE, NULL));
}

static inline const char *sb_message_source_name(GstMessage *message) {
    return GST_MESSAGE_SRC(message) != NULL ? GST_OBJECT_NAME(GST_MESSAGE_SRC(message)) : "";
}

static inline GstMessageType sb_message_type(GstMessage *message) { return GST_MESSAGE_TYPE(message); }

/* Posts an error from `element` on its bus, as a failing element does. */
static inline void sb_post_error(GstElement *element, const char *text) {
    GError *error = g_error_new_literal(GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED, text);
    gst_element_post_message(element, gst_message_new_error(GST_OBJECT(element), error, text));
    g_error_free(error);
}

/* The message source's path in the pipeline ("/GstPipeline:p/GstWebRTCBin:w/..."); g_free it. */
static inline gchar *sb_message_source_path(GstMessage *message) {
    return GST_MESSAGE_SRC(message) != NULL ? gst_object_get_path_string(GST_MESSAGE_SRC(message)) : NULL;
}

static inline const char *sb_object_name(gpointer object) { return GST_OBJECT_NAME(object); }

/// Whether a probe sees the end of the stream.
static inline gboolean sb_probe_is_eos(GstPadProbeInfo *info) {
    GstEvent *event = GST_PAD_PROBE_INFO_EVENT(info);
    return event != NULL && GST_EVENT_TYPE(event) == GST_EVENT_EOS;
}

/// An unsigned field of a pad's current caps (the `ssrc` of an RTP pad); FALSE without it.
static inline gboolean sb_pad_caps_uint(GstPad *pad, const char *field, guint *value) {
    GstCaps *caps = gst_pad_get_current_caps(pad);
    if (caps == NULL) return FALSE;
    gboolean found = gst_structure_get_uint(gst_caps_get_structure(caps, 0), field, value);
    gst_caps_unref(caps);
    return found;
}

/// Width and height of a pad's current video caps; FALSE without caps.
static inline gboolean sb_pad_video_size(GstPad *pad, gint *width, gint *height) {
    GstCaps *caps = gst_pad_get_current_caps(pad);
    if (caps == NULL) return FALSE;
    const GstStructure *structure = gst_caps_get_structure(caps, 0);
    gboolean found = gst_structure_get_int(structure, "width", width) && gst_structure_get_int(structure, "height", height);
    gst_caps_unref(caps);
    return found;
}

static inline GstElement *sb_bin_by_name(GstElement *bin, const char *name) {
    return gst_bin_get_by_name(GST_BIN(bin), name);
}

static inline gboolean sb_bin_add(GstElement *bin, GstElement *element) { return gst_bin_add(GST_BIN(bin), element); }

static inline gboolean sb_bin_remove(GstElement *bin, GstElement *element) {
    return gst_bin_remove(GST_BIN(bin), element);
}

static inline GstBus *sb_pipeline_bus(GstElement *pipeline) { return gst_pipeline_get_bus(GST_PIPELINE(pipeline)); }

static inline GstPadTemplate *sb_pad_template(GstElement *element, const char *name) {
    return gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(element), name);
}

#endif
