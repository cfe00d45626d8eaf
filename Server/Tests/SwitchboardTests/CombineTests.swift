#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// The stores' Combine publishers, in the shapes of TRTC's samples, run here on OpenCombine (the
/// same code uses Apple's Combine on iOS).
struct CombineTests {
    /// A publisher's values, recorded so the test can wait for the ones it expects.
    final class Sink<Value: Sendable>: Sendable {
        let recorder: Recorder<Value>
        private let cancellable: NIOLockedValueBox<AnyCancellableBox?>

        init(_ publisher: AnyPublisher<Value, Never>) {
            let (stream, continuation) = AsyncStream<Value>.makeStream()
            recorder = Recorder(stream)
            cancellable = NIOLockedValueBox(AnyCancellableBox(publisher.sink { continuation.yield($0) }))
        }
    }

    /// `AnyCancellable` cancels when released; it is just not marked Sendable.
    final class AnyCancellableBox: @unchecked Sendable {
        let cancellable: AnyCancellable
        init(_ cancellable: AnyCancellable) { self.cancellable = cancellable }
    }

    @Test func theTRTCSampleShapesWork() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")

        // `CallStore.shared.callEventPublisher.sink { if case .onCallEnded = event { … } }`
        let bobEvents = Sink(bob.callStore.callEventPublisher)
        // `state.subscribe(StatePublisherSelector(keyPath: \.selfInfo.status)).removeDuplicates()`
        let bobStatus = Sink(bob.callStore.subscribe(StatePublisherSelector(keyPath: \.selfInfo.status)))
        // `state.subscribe().map { $0.activeCall }.removeDuplicates { $0.duration == $1.duration }`
        let aliceTimer = Sink(
            alice.callStore.subscribe().map { $0.activeCall?.duration }.removeDuplicates().eraseToAnyPublisher())
        // `DeviceStore.shared.state.subscribe().map { $0.microphoneStatus }.removeDuplicates()`
        let bobMicrophone = Sink(bob.deviceStore.subscribe(StatePublisherSelector(keyPath: \.microphoneStatus)))

        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.recorder.first(from: 0) { if case .onCallReceived(call.callId, _, _, _, _) = $0 { true } else { false } }
        try await bobStatus.recorder.first(from: 0) { $0 == .waiting }
        bob.deviceStore.openLocalMicrophone()
        try await bob.callStore.accept()
        try await bobStatus.recorder.first(from: 0) { $0 == .accept }
        try await bobMicrophone.recorder.first(from: 0) { $0 == .on }
        server.clock.advance(by: .seconds(2))
        try await aliceTimer.recorder.first(from: 0) { $0 == 2 }
        try await alice.callStore.hangup()
        try await bobEvents.recorder.first(from: 0) { if case .onCallEnded(call.callId, _, .hangup, _) = $0 { true } else { false } }
        try await bobStatus.recorder.first(from: 0) { $0 == .none }
        // A key path publisher never repeats a value.
        #expect(bobStatus.recorder.values == [.none, .waiting, .accept, .none])
        #expect(bobMicrophone.recorder.values == [.off, .on])
        await server.stop()
    }

    /// A view made after the invitation came still learns of the ringing call, from the publisher
    /// and from the AsyncSequence, once.
    @Test func aLateSubscriberLearnsOfTheRingingCall() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let early = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "hello"))
        let received = try await early.first(from: 0, where: isReceived)
        #expect(
            received == .onCallReceived(callId: call.callId, callerId: "alice", inviterId: "alice", mediaType: .video, userData: "hello"))

        let late = Sink(bob.callStore.callEventPublisher)
        let lateSequence = Recorder(bob.callStore.events)
        #expect(try await late.recorder.first(from: 0, where: isReceived) == received)
        #expect(try await lateSequence.first(from: 0, where: isReceived) == received)
        // The ringing call is replayed once: the next event is its end, not a second invitation.
        try await alice.callStore.hangup()
        try await late.recorder.first(from: 0, where: isEnded)
        try await lateSequence.first(from: 0, where: isEnded)
        #expect(late.recorder.values.filter(isReceived).count == 1)
        #expect(lateSequence.values.filter(isReceived).count == 1)

        // Nothing rings any more: a new subscriber gets nothing replayed. The barrier is the next
        // call's invitation.
        let afterwards = Sink(bob.callStore.callEventPublisher)
        let next = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let first = try await afterwards.recorder.first(from: 0, where: isReceived)
        #expect(first == .onCallReceived(callId: next.callId, callerId: "alice", inviterId: "alice", mediaType: .audio, userData: nil))
        await server.stop()
    }

    /// A sink may call back into the SDK; what that changes arrives after the value it is handling,
    /// in order, and nothing deadlocks. A cancelled subscription gets nothing more.
    @Test func sinksMayCallTheSDKAndCancelling() async throws {
        let client = SwitchboardClient()
        let devices = client.deviceStore
        let cameras = NIOLockedValueBox<[DeviceSwitch]>([])
        let microphones = NIOLockedValueBox<[DeviceSwitch]>([])
        let reentrant = AnyCancellableBox(
            devices.subscribe(StatePublisherSelector(keyPath: \.cameraStatus)).sink { status in
                cameras.withLockedValue { $0.append(status) }
                // Turning the camera on turns the microphone on too, from inside the sink.
                if status == .on { devices.openLocalMicrophone() }
            })
        var microphone: AnyCancellableBox? = AnyCancellableBox(
            devices.subscribe(StatePublisherSelector(keyPath: \.microphoneStatus)).sink { status in
                microphones.withLockedValue { $0.append(status) }
            })
        // Deliveries run on the thread that made the change, before it returns.
        devices.openLocalCamera()
        #expect(cameras.withLockedValue { $0 } == [.off, .on])
        #expect(microphones.withLockedValue { $0 } == [.off, .on])
        #expect(devices.state.microphoneStatus == .on)

        microphone = nil
        devices.closeLocalMicrophone()
        // The barrier: the camera's sink, still subscribed, got the change that followed.
        devices.closeLocalCamera()
        #expect(cameras.withLockedValue { $0 } == [.off, .on, .off])
        #expect(microphones.withLockedValue { $0 } == [.off, .on])
        withExtendedLifetime((reentrant, microphone)) {}
    }

    /// A subscriber that takes one value and cancels during the first delivery leaves no observer
    /// behind, and the publisher works for the next one.
    @Test func aSubscriberThatCancelsAtOnce() async throws {
        let client = SwitchboardClient()
        let first = NIOLockedValueBox<LoginStore.LoginStatus?>(nil)
        let once = AnyCancellableBox(
            client.loginStore.subscribe(StatePublisherSelector(keyPath: \.loginStatus)).first().sink { value in
                first.withLockedValue { $0 = value }
            })
        #expect(first.withLockedValue { $0 } == .loggedOut)
        let again = Sink(client.loginStore.subscribe())
        #expect(try await again.recorder.first(from: 0) { _ in true }.loginStatus == .loggedOut)
        withExtendedLifetime(once) {}
    }
}
