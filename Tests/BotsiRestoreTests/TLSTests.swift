import BotsiRestore
import BotsiTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

/// TLS against a real server: `openssl s_server` with a throw-away CA made in the test's directory.
/// Without the CA the certificate does not verify and the run stops (exit 69, `tls_error`, a message that
/// names --cacert); with `caCertificatePath` the handshake succeeds and the server's reply is judged.
@Suite(.enabled(if: OpenSSLTool.path != nil, "openssl is not installed (Debian package: openssl)"))
struct TLSTests {
    /// What the server sends once a client completes the handshake: a web page, as a TLS terminator
    /// that is not Botsi might send. A 200 that is not JSON counts as `invalid_response`.
    private static let htmlReply =
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 44\r\nConnection: close\r\n\r\n"
        + "<html><body>openssl s_server</body></html>\r\n"

    @Test func aCertificateFromAnUnknownCAStopsTheRunWith69AndNamesCacert() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let authority = try TestAuthority(directory: harness.scratch.path)
        let server = try TLSServer(authority: authority)
        defer { server.stop() }
        let rows = (0..<5).map { ("profile-\($0)", String(2_000_000_000_000_002 + $0 * 10)) }
        let started = Date()
        let summary = try harness.run([harness.scratch.csv(rows: rows)]) { options in
            options.baseURL = server.baseURL
            options.concurrency = 2
        }
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(summary.exitCode == 69)
        #expect(summary.stopMessage?.contains("--cacert") == true)
        let records = try harness.records()
        #expect(records.count == 5)
        #expect(records.allSatisfy { $0.status == .pending })
        #expect(records.contains { $0.code == "tls_error" })
        #expect(records.allSatisfy { $0.code == nil || $0.code == "tls_error" })
        #expect(!server.received.contains("POST "), "nothing was sent over an unverified connection")
    }

    @Test func theCAFileMakesTheHandshakeSucceed() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let authority = try TestAuthority(directory: harness.scratch.path)
        let server = try TLSServer(authority: authority, reply: Self.htmlReply)
        defer { server.stop() }
        let started = Date()
        let summary = try harness.run([harness.scratch.csv(rows: [("p-1", "2000000000000002")])]) { options in
            options.baseURL = server.baseURL
            options.caCertificatePath = authority.certificatePath
            options.maxAttempts = 1
        }
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(summary.exitCode == 75, "the row stays pending; the run was not stopped by TLS")
        let record = try #require(try harness.record("p-1", "2000000000000002"))
        #expect(record.status == .pending)
        #expect(record.code == "invalid_response")
        #expect(record.httpStatus == 200)
        // The server decrypted the request: the CA file was used and verification passed.
        #expect(waitUntil { server.received.contains("POST /v2/purchases/apple-store/restore HTTP/1.1") })
    }

    /// The certificate must name the host the base URL names: one made for 127.0.0.1, reached as
    /// localhost (pinned to 127.0.0.1, its CA given), is refused like one from an unknown CA.
    @Test func aCertificateForAnotherHostStopsTheRun() throws {
        let harness = try Harness()
        defer { harness.simulator.stop() }
        let authority = try TestAuthority(directory: harness.scratch.path)
        let server = try TLSServer(authority: authority, reply: Self.htmlReply)
        defer { server.stop() }
        let summary = try harness.run([harness.scratch.csv(rows: [("p-1", "2000000000000002")])]) { options in
            options.baseURL = "https://localhost:\(server.port)"
            options.caCertificatePath = authority.certificatePath
            options.maxAttempts = 1
        }
        #expect(summary.exitCode == 69)
        #expect(summary.stopMessage?.contains("--cacert") == true)
        let record = try #require(try harness.record("p-1", "2000000000000002"))
        #expect(record.code == "tls_error")
        #expect(!server.received.contains("POST "), "the request went to a server the certificate does not name")
    }
}
