import Switchboard
import SwitchboardProtocol
import SwiftUI

/// Your call records, newest first, a page at a time; swipe to delete one.
@MainActor
struct RecordsView: View {
    @State private var records: [CallRecord] = []
    @State private var next: Int64 = -1
    @State private var hasMore = true
    @State private var problem: String?

    var body: some View {
        List {
            ForEach(records, id: \.callId) { record in
                VStack(alignment: .leading) {
                    Text(Self.title(record)).font(.headline)
                    Text("\(Self.result(record)) · \(record.mediaType.rawValue) · \(CallDurationText.format(seconds: record.duration))")
                        .font(.subheadline).foregroundColor(.secondary)
                }
            }
            .onDelete { offsets in
                let ids = offsets.map { records[$0].callId }
                records.remove(atOffsets: offsets)
                Task { _ = try? await CallStore.shared.deleteRecords(callIds: ids) }
            }
            if hasMore {
                Button("More") { Task { await loadMore() } }
            }
            if let problem { Text(problem).foregroundColor(.red) }
        }
        .navigationTitle("Records")
        .task { await loadMore() }
        .refreshable {
            records = []
            next = -1
            hasMore = true
            await loadMore()
        }
    }

    private func loadMore() async {
        do {
            let page = try await CallStore.shared.queryRecords(syncTime: next, count: 30)
            records += page.records
            next = page.syncTime
            hasMore = page.hasMore
        } catch {
            problem = "\(error)"
        }
    }

    static func title(_ record: CallRecord) -> String {
        let me = LoginStore.shared.state.selfInfo?.userId
        let others = record.direction == .incoming ? [record.callerId] : record.participantIds.filter { $0 != me }
        return (record.direction == .incoming ? "From " : "To ") + others.map(\.rawValue).joined(separator: ", ")
    }

    /// A call nobody answered reads "no answer" for its caller and "missed" for the callees.
    static func result(_ record: CallRecord) -> String {
        switch record.result {
        case .noAnswer: "no answer"
        default: record.result.rawValue
        }
    }
}
