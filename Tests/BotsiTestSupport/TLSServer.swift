import Foundation
import Glibc
import Synchronization

// A throw-away CA and `openssl s_server`, for tests that need real TLS (BotsiRestoreTests in process,
// EndToEndTests through the binary).

/// Finds `openssl` on PATH once.
public enum OpenSSLTool {
    public static let path: String? = {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/openssl" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Runs openssl to completion; a failure carries its stderr.
    public static func run(_ arguments: [String], in directory: String) throws {
        try runProgram(path!, arguments, directory: directory).requireSuccess()
    }
}

/// A CA and a server certificate for 127.0.0.1 signed by it, valid for a day, in `directory`.
public struct TestAuthority {
    public let certificatePath: String
    public let serverCertificatePath: String
    public let serverKeyPath: String

    public init(directory: String) throws {
        certificatePath = directory + "/ca.pem"
        serverCertificatePath = directory + "/server.pem"
        serverKeyPath = directory + "/server.key"
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try OpenSSLTool.run(
            ["req", "-x509"] + curve + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=botsi-restore test CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: directory)
        try OpenSSLTool.run(
            ["req", "-new"] + curve + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
            in: directory)
        try """
        subjectAltName=IP:127.0.0.1
        basicConstraints=CA:FALSE
        keyUsage=critical,digitalSignature
        extendedKeyUsage=serverAuth

        """.write(toFile: directory + "/server.ext", atomically: true, encoding: .utf8)
        try OpenSSLTool.run(
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.pem", "-days", "1", "-extfile", "server.ext",
            ], in: directory)
    }
}

/// `openssl s_server` on a free loopback port. In its plain mode it writes what a client sends to stdout
/// (so a test can see the request arrived decrypted) and sends what arrives on stdin: `reply`, queued
/// once the server listens, goes to the first client that completes a handshake.
public final class TLSServer {
    public let port: Int
    private let process: Process
    private let input: Pipe
    private let output: ReceivedBytes

    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Everything clients sent so far, as text.
    public var received: String { output.text }

    /// `extraArguments` go to s_server as they are (e.g. `-tls1_1` to offer only TLS 1.1).
    public init(authority: TestAuthority, reply: String? = nil, extraArguments: [String] = []) throws {
        var lastError: any Error = TestSupportError("openssl s_server did not start")
        // A port picked free may be taken before s_server binds it; a few tries make that moot.
        for _ in 0..<3 {
            let port = try Loopback.freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: OpenSSLTool.path!)
            // -brief: no interactive commands read from stdin, so the reply is sent as it is.
            process.arguments =
                [
                    "s_server", "-accept", "127.0.0.1:\(port)", "-cert", authority.serverCertificatePath, "-key",
                    authority.serverKeyPath, "-brief",
                ] + extraArguments
            let input = Pipe()
            let outputPipe = Pipe()
            let output = ReceivedBytes()
            process.standardInput = input
            process.standardOutput = outputPipe
            process.standardError = FileHandle.nullDevice
            outputPipe.fileHandleForReading.readabilityHandler = { handle in output.append(handle.availableData) }
            try process.run()
            if waitUntil({ Self.isListening(port) || !process.isRunning }), process.isRunning {
                self.port = port
                self.process = process
                self.input = input
                self.output = output
                if let reply { input.fileHandleForWriting.write(Data(reply.utf8)) }
                return
            }
            Self.kill(process)
            lastError = TestSupportError("openssl s_server did not listen on port \(port)")
        }
        throw lastError
    }

    public func stop() {
        Self.kill(process)
        try? input.fileHandleForWriting.close()
    }

    /// SIGKILL, not SIGTERM: a child spawned from a test thread can inherit a mask that blocks SIGTERM,
    /// and a throw-away server has nothing to clean up.
    private static func kill(_ process: Process) {
        guard process.isRunning else { return }
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Reads the kernel's table rather than connecting: a probe connection would reach s_server as a
    /// client and could take the queued reply.
    private static func isListening(_ port: Int) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return false }
        let local = String(format: "0100007F:%04X", port)
        return table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1] == local && fields[3] == "0A"
        }
    }
}

public final class ReceivedBytes: Sendable {
    private let data = Mutex(Data())

    public init() {}

    public func append(_ chunk: Data) { data.withLock { $0.append(chunk) } }

    public var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }
}

/// Polls until `condition` holds or a generous deadline passes (the machine is shared and noisy).
public func waitUntil(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
