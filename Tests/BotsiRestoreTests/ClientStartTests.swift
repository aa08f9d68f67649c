import BotsiAPI
import BotsiBasics
import BotsiTestSupport
import Foundation
import Testing

@testable import BotsiRestore

/// A client that cannot start for want of a local resource exits 71 (EX_OSERR) and names it, not
/// 64 as if the command line were wrong (issue 18, item 7). Each case runs in a child process of its
/// own (an exit test), where the descriptor limit can be lowered without touching other tests.
@Suite struct ClientStartTests {
    @Test func noDescriptorLeftForTheClientsEpollSetExits71NamingIt() async {
        let result = await #expect(processExitsWith: .exitCode(71), observing: [\.standardErrorContent]) {
            ResourceLimits.leaveNoDescriptorFree()
            ClientStartTests.startAClientAndExit()
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        // The first descriptor the client makes fails: its epoll set, or (when a thread of the
        // exit test's process closed one below the limit meanwhile, as under the full suite's
        // load) its wake-up eventfd next. Either way the message names the descriptor limit.
        #expect(
            (stderr.contains("epoll") || stderr.contains("eventfd")) && stderr.contains("Too many open files"),
            "\(stderr)")
        #expect(stderr.contains("ulimit -n"), "\(stderr)")
    }

    @Test(.disabled(if: Sanitizer.isActive, "a sanitizer's shadow memory does not fit a lowered RLIMIT_AS"))
    func noMemoryForTheClientsThreadExits71NamingIt() async {
        let result = await #expect(processExitsWith: .exitCode(71), observing: [\.standardErrorContent]) {
            // libcurl set up first (a PUT to a closed port starts no thread, which could leave a
            // stack behind for reuse), so that the thread's stack is what is left to map.
            _ = TextPut.put(url: "http://127.0.0.1:9/", body: "", contentType: "text/plain", timeout: 1, proxy: .none)
            // 2 MiB more: less than a thread's 8 MiB stack.
            ResourceLimits.leaveAddressSpace(2 << 20)
            ClientStartTests.startAClientAndExit()
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("thread"), "\(stderr)")
    }

    /// In the exit test's process: starts a client as a run does, and exits 0, or with the exit
    /// status the run would, its message on stderr.
    static func startAClientAndExit() -> Never {
        var options = RunOptions()
        options.baseURL = "http://127.0.0.1:9"
        do {
            let client = try RunSetup.startClient(options, apiKey: "key", toolVersion: "test") { _ in }
            client.shutdown()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data((error.message + "\n").utf8))
            exit(error.exitCode)
        }
    }

    @Test func aBadConfigurationIsStillAUsageError() throws {
        var options = RunOptions()
        options.baseURL = "http://example.com"
        #expect(throws: RunSetupError.self) {
            _ = try RunSetup.startClient(options, apiKey: "key", toolVersion: "test") { _ in }
        }
        do {
            _ = try RunSetup.startClient(options, apiKey: "key", toolVersion: "test") { _ in }
        } catch {
            #expect(error.exitCode == ExitCode.usage, "\(error.message)")
        }
    }
}
