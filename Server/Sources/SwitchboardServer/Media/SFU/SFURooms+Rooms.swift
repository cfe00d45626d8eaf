import Foundation
import Logging
import SwitchboardProtocol

/// Rooms: where a call's room is (the Janus with the fewest members), made, destroyed, and the handles on it.
extension SFURooms {
    /// Janus's id of a call's room: 53 bits (exact in every JSON reader) of a hash of the call id,
    /// moved on while another call of this node has it.
    func roomNumber(for callId: CallID) -> UInt64 {
        var salt = 0
        while true {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in (salt == 0 ? callId.rawValue : "\(callId.rawValue)#\(salt)").utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            }
            let number = max(1, hash & ((1 << 53) - 1))
            if !rooms.contains(where: { $0.key != callId && $0.value.number == number }) { return number }
            salt += 1
        }
    }

    func members(on server: Int) -> Int {
        rooms.values.filter { $0.server == server }.reduce(0) { $0 + $1.members.count }
    }

    /// The server the call's room is on, placing it (creating it on the least loaded server that
    /// is up) when it has none or its server is down. Nil: no server could take it.
    func place(_ callId: CallID) async -> Int? {
        guard var room = rooms[callId] else { return nil }
        if let server = room.server {
            if await servers[server].isUp { return server }
            // Its server went down and the news has not come through this call's queue yet.
            await lost(callId, server: server)
            room = rooms[callId] ?? room
        }
        var candidates: [(server: Int, load: Int)] = []
        for index in servers.indices where await servers[index].isUp {
            candidates.append((index, members(on: index)))
        }
        for candidate in candidates.sorted(by: { ($0.load, $0.server) < ($1.load, $1.server) }) {
            do {
                try await createRoom(room.number, recordings: recordings?.folder(of: callId), on: candidate.server)
                room = rooms[callId] ?? room
                room.server = candidate.server
                rooms[callId] = room
                logger.info(
                    "a call's room is on an SFU", metadata: ["call": "\(callId)", "sfu": "\(servers[candidate.server].url)"])
                return candidate.server
            } catch {
                logger.error(
                    "could not make a room on an SFU",
                    metadata: ["call": "\(callId)", "sfu": "\(servers[candidate.server].url)", "error": "\(error)"])
            }
        }
        if var waiting = rooms[callId] {
            waiting.server = nil
            rooms[callId] = waiting
        }
        logger.error("no SFU can take a call's room; it waits for one", metadata: ["call": "\(callId)"])
        return nil
    }

    func controlHandle(_ server: Int) async throws -> UInt64 {
        if let handle = control[server] { return handle }
        let handle = try await attach(server)
        control[server] = handle
        return handle
    }

    func createRoom(_ number: UInt64, recordings folder: String?, on server: Int) async throws {
        let handle = try await controlHandle(server)
        var create = VideoRoomRequest(request: "create")
        create.room = number
        create.admin_key = secret
        create.permanent = false
        create.is_private = true
        create.publishers = Self.publishersPerRoom
        create.audiocodec = "opus"
        create.videocodec = "vp8"
        create.fir_freq = 10
        create.audiolevel_ext = true
        create.rec_dir = folder
        do {
            _ = try await servers[server].request("message", handle: handle, body: create, completion: .success)
        } catch JanusServer.Failure.janus(let error) where error.code == JanusError.roomExists {
            // Left behind by an earlier run (a crash, another node that led): replace it.
            try await destroyRoom(number, on: server)
            _ = try await servers[server].request("message", handle: handle, body: create, completion: .success)
        }
    }

    func destroyRoom(_ number: UInt64, on server: Int) async throws {
        let handle = try await controlHandle(server)
        var destroy = VideoRoomRequest(request: "destroy")
        destroy.room = number
        destroy.permanent = false
        _ = try await servers[server].request("message", handle: handle, body: destroy, completion: .success)
    }

    func attach(_ server: Int) async throws -> UInt64 {
        let answer = try await servers[server].request("attach", plugin: Self.plugin, completion: .success)
        guard let id = answer.data?.id else { throw JanusServer.Failure.unexpected("attach without an id") }
        return id
    }

    func detach(_ handle: UInt64?, on server: Int?) async {
        guard let handle, let server else { return }
        handles[HandleKey(server: server, handle: handle)] = nil
        _ = try? await servers[server].request("detach", handle: handle, completion: .success)
    }

    /// Drops a member's handles (their PeerConnections end; Janus tells the others' subscriptions).
    func drop(_ member: Member, server: Int?) async {
        await detach(member.subscriber, on: server)
        await detach(member.publisher, on: server)
    }
}
