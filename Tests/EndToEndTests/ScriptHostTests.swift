import BotsiTestSupport
import Foundation
import Testing

/// The project's scripts name no outside host of their own: a package registry is reached through
/// its client (pip, apt), which knows where its index is and how a proxy or a mirror is set, never
/// probed by a host name written here (issue 19, item 17).
@Suite("the scripts name no outside host")
struct ScriptHostTests {
    /// Hosts a script may name: loopback, the product's own API, documentation examples, in-cluster
    /// names of the manifests, and an XML namespace (a name in a document, never fetched).
    static let allowed: Set<String> = [
        "127.0.0.1", "localhost", "api.botsi.com", "registry.example.com", "pushgateway.monitoring.svc",
        "schemas.openxmlformats.org",
    ]
    static let folders = [".ci", "scripts", "cron", "jobs", "bench"]

    @Test func everyURLInTheScriptsNamesAnAllowedHost() throws {
        var found: [String] = []
        for folder in Self.folders {
            let root = Locations.packageRoot + "/" + folder
            let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
            for file in files {
                let path = root + "/" + file
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                let text = String(decoding: data, as: UTF8.self)
                let pattern = try Regex(#"https?://([A-Za-z0-9.-]+)"#)
                for match in text.matches(of: pattern) {
                    let host = String(match.output[1].substring ?? "")
                    if !Self.allowed.contains(host) { found.append("\(folder)/\(file): \(host)") }
                }
            }
        }
        #expect(found.isEmpty, "ask the package client instead of probing a host: \(found)")
    }
}
