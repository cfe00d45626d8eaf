import Foundation
import Hummingbird
import Logging

/// The browser client's files, for `FileMiddleware`: regular files inside the root only.
///
/// No path component may start with a dot (no `.git/`, `.env`, `..`), and what a path names, once
/// symlinks are resolved, must be a regular file (or a directory, for its `index.html`) inside the
/// root: a symlink that leaves the root (to `/etc`, say) is not followed.
struct WebRoot: FileProvider {
    struct FileAttributes: FileMiddlewareFileAttributes, Sendable {
        var isFolder: Bool
        var size: Int
        var modificationDate: Date
    }

    /// The path of a file checked by ``getAttributes(id:)``.
    typealias FileIdentifier = String

    /// The root, symlinks resolved, ending in `/`.
    let root: String
    private let fileIO = FileIO()

    /// Nil when `folder` does not exist.
    init?(folder: String, logger: Logger) {
        guard let resolved = Self.resolve(folder), Self.kind(of: resolved) == .directory else { return nil }
        root = resolved.hasSuffix("/") ? resolved : resolved + "/"
        logger.info("serving the browser client", metadata: ["root": "\(root)"])
    }

    func getFileIdentifier(_ path: String) -> String? {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !components.contains(where: { $0.hasPrefix(".") || $0.contains("\0") }) else { return nil }
        return root + components.joined(separator: "/")
    }

    func getAttributes(id: String) async throws -> FileAttributes? {
        guard let resolved = Self.resolve(id), resolved.hasPrefix(root) || resolved + "/" == root else { return nil }
        var info = stat()
        guard stat(resolved, &info) == 0 else { return nil }
        let kind = Self.kind(of: info)
        guard kind == .regular || kind == .directory else { return nil }
        return FileAttributes(
            isFolder: kind == .directory, size: Int(info.st_size),
            modificationDate: Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec)))
    }

    func loadFile(id: String, context: some RequestContext) async throws -> ResponseBody {
        guard let resolved = try await checked(id) else { throw HTTPError(.notFound) }
        return try await fileIO.loadFile(path: resolved, context: context)
    }

    func loadFile(id: String, range: ClosedRange<Int>, context: some RequestContext) async throws -> ResponseBody {
        guard let resolved = try await checked(id) else { throw HTTPError(.notFound) }
        return try await fileIO.loadFile(path: resolved, range: range, context: context)
    }

    /// The resolved path of a regular file inside the root.
    private func checked(_ id: String) async throws -> String? {
        guard let attributes = try await getAttributes(id: id), !attributes.isFolder else { return nil }
        return Self.resolve(id)
    }

    private enum Kind { case regular, directory, other }

    private static func kind(of path: String) -> Kind {
        var info = stat()
        return stat(path, &info) == 0 ? kind(of: info) : .other
    }

    private static func kind(of info: stat) -> Kind {
        switch info.st_mode & S_IFMT {
        case S_IFREG: .regular
        case S_IFDIR: .directory
        default: .other
        }
    }

    /// The path with every symlink resolved; nil when it does not exist.
    private static func resolve(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
