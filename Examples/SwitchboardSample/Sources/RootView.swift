import Switchboard
import SwitchboardProtocol
import SwiftUI

/// Login, then calling and the records.
@MainActor
struct RootView: View {
    @ObservedObject var session: SampleSession

    var body: some View {
        NavigationView {
            Group {
                if let user = session.loggedInAs {
                    HomeView(session: session, user: user)
                } else {
                    LoginView(session: session)
                }
            }
            .navigationTitle("Switchboard")
        }
        .navigationViewStyle(.stack)
    }
}

@MainActor
struct LoginView: View {
    @ObservedObject var session: SampleSession
    @State private var userID = ""
    @State private var busy = false

    var body: some View {
        Form {
            Section("Development server") {
                TextField("http://192.168.1.20:8080", text: $session.server.address)
                    .keyboardType(.URL)
                    .textInputAutocapitalization(.never)
                    .disableAutocorrection(true)
                Toggle("Sandbox pushes (a build run from Xcode)", isOn: $session.server.sandboxPushes)
            }
            Section("You") {
                TextField("User ID (letters, digits, - and _)", text: $userID)
                    .textInputAutocapitalization(.never)
                    .disableAutocorrection(true)
            }
            Button(busy ? "Logging in…" : "Log in") {
                busy = true
                Task {
                    // The SDK's server address changes with the field.
                    session.start()
                    await session.login(userID: userID)
                    busy = false
                }
            }
            .disabled(userID.isEmpty || busy)
            if let problem = session.problem { Text(problem).foregroundColor(.red) }
        }
    }
}

@MainActor
struct HomeView: View {
    @ObservedObject var session: SampleSession
    let user: String
    @State private var callees = ""

    var body: some View {
        Form {
            Section("Logged in as \(user)") {
                Text("VoIP push token: \(session.pushToken ?? "not registered yet")").font(.footnote)
                Button("Log out", role: .destructive) { Task { await session.logout() } }
            }
            Section("Call") {
                TextField("User IDs, separated by commas", text: $callees)
                    .textInputAutocapitalization(.never)
                    .disableAutocorrection(true)
                HStack {
                    Button("Voice call") { call(video: false) }
                    Spacer()
                    Button("Video call") { call(video: true) }
                }
                .disabled(callees.isEmpty)
            }
            Section {
                NavigationLink("Call records") { RecordsView() }
            }
            if let problem = session.problem { Text(problem).foregroundColor(.red) }
        }
    }

    private func call(video: Bool) {
        let ids = callees.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        Task { await session.call(ids, video: video) }
    }
}
