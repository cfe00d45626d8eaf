import Foundation
import SwitchboardTestServers

// A `TestNetwork` for tests written in other languages (the browser tests): the same namespaces,
// links and failures the Swift tests use, driven over standard input and output.
//
//   switchboard-testnet HOST...   makes the network, prints one JSON line:
//                                 {"hub": NS, "hosts": {"HOST": {"namespace": NS, "address": IP}, ...}}
//   then one command per line, each answered by one line, "ok [VALUE]" or "error MESSAGE":
//     cut HOST | restore HOST | move HOST (answers the new address)
//     limit HOST KBITS | limit HOST off | isolate HOST OTHER
//     proxy HOST ADDRESS PORT: a loopback port of this machine's own namespace (the answer) whose
//       connections go to ADDRESS:PORT from inside HOST's namespace (`TestNetwork.proxy`)
//   End of input (also the test's process dying) removes every namespace and link, then exits;
//   if this process is killed instead, the next network made on this machine removes them.
//
// Stop the processes running inside the namespaces before closing its input: a namespace lives
// on, unnamed, while a process is in it.

let names = Array(CommandLine.arguments.dropFirst())
guard !names.isEmpty else {
    FileHandle.standardError.write(Data("usage: switchboard-testnet HOST...\n".utf8))
    exit(2)
}

func reply(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

let network: TestNetwork
do {
    network = try TestNetwork(hosts: names)
} catch {
    reply("error \(error)")
    exit(1)
}
let description: [String: Any] = [
    "hub": network.hub,
    "hosts": Dictionary(
        uniqueKeysWithValues: network.hosts.map { ($0.name, ["namespace": $0.namespace, "address": network.address(of: $0.name)]) }),
]
reply(String(decoding: try JSONSerialization.data(withJSONObject: description, options: [.sortedKeys]), as: UTF8.self))

var proxies: [TCPProxy] = []
while let line = readLine() {
    let words = line.split(separator: " ").map(String.init)
    guard let command = words.first else { continue }
    let hostsNamed = command == "proxy" || words.dropFirst().allSatisfy { word in names.contains(word) || Int(word) != nil || word == "off" }
    guard hostsNamed else {
        reply("error unknown host in \(line)")
        continue
    }
    do {
        switch (command, words.count) {
        case ("cut", 2): try network.cut(words[1]); reply("ok")
        case ("restore", 2): try network.restore(words[1]); reply("ok")
        case ("move", 2): reply("ok \(try network.moveAddress(words[1]))")
        case ("limit", 3): try network.limit(words[1], kilobitsPerSecond: Int(words[2])); reply("ok")
        case ("isolate", 3): try network.isolate(words[1], from: words[2]); reply("ok")
        case ("proxy", 4):
            guard names.contains(words[1]), let port = Int(words[3]) else {
                reply("error usage: proxy HOST ADDRESS PORT")
                continue
            }
            let proxy = try await network.proxy(from: words[1], to: words[2], port: port)
            proxies.append(proxy)
            reply("ok \(proxy.port)")
        default: reply("error unknown command: \(line)")
        }
    } catch {
        reply("error \(error)")
    }
}
for proxy in proxies { proxy.stop() }
network.remove()
