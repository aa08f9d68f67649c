import BotsiAPI
import BotsiTestSupport
import Dispatch
import Foundation
import Testing

/// The descriptor limit, in exit tests: each case changes RLIMIT_NOFILE in a child process of its
/// own, never in the process that runs the other tests (issue 20, item 8).
@Suite struct DescriptorLimitTests {
    @Test func theSoftLimitIsRaisedTowardsTheHardOneAndConcurrencyFitsWhatIsLeft() async {
        await #expect(processExitsWith: .exitCode(0), observing: [\.standardErrorContent]) {
            func setLimit(soft: Int, hard: Int) {
                var limit = rlimit(rlim_cur: rlim_t(soft), rlim_max: rlim_t(hard))
                setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            }
            func soft() -> Int {
                var limit = rlimit()
                getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
                return Int(limit.rlim_cur)
            }
            var failures: [String] = []
            func check(_ condition: Bool, _ what: String) { if !condition { failures.append(what) } }
            setLimit(soft: 100, hard: 2000)
            // 32 + 1 input + 3 per connection: 8 connections need 57.
            check(DescriptorBudget.fit(concurrency: 8, inputs: 1) == .fits && soft() == 100, "8 fit in 100")
            check(DescriptorBudget.fit(concurrency: 256, inputs: 1) == .fits && soft() == 801, "soft raised to 801")
            check(DescriptorBudget.fit(concurrency: 1000, inputs: 1) == .lowered(concurrency: 655, limit: 2000), "hard")
            setLimit(soft: 64, hard: 64)
            check(DescriptorBudget.fit(concurrency: 256, inputs: 1) == .lowered(concurrency: 10, limit: 64), "64")
            check(DescriptorBudget.fit(concurrency: 256, inputs: 4) == .lowered(concurrency: 9, limit: 64), "inputs")
            setLimit(soft: 35, hard: 35)
            check(DescriptorBudget.fit(concurrency: 8, inputs: 1) == .tooLow(limit: 35, needed: 36), "too low")
            FileHandle.standardError.write(Data(failures.joined(separator: "; ").utf8))
            exit(failures.isEmpty ? 0 : 1)
        }
    }

    /// Past the limit a socket cannot be made, and curl calls that "Couldn't connect to server", as
    /// for a server that refuses: the message says whose limit it is.
    @Test func aRequestWithoutASocketNamesTheDescriptorLimit() async {
        let result = await #expect(processExitsWith: .exitCode(0), observing: [\.standardErrorContent]) {
            let done = DispatchSemaphore(value: 0)
            let message = LockedText()
            let configuration = ClientConfiguration(
                baseURL: "http://127.0.0.1:9", apiKey: "key", userAgent: "botsi-restore/test")
            guard
                let client = try? RestoreClient(
                    configuration: configuration,
                    onResult: { result in
                        message.set(result.reply.message ?? "")
                        done.signal()
                    })
            else { exit(2) }
            // A first request with descriptors to spare, so that the client's thread has opened
            // (and closed) all it opens on its own before the limit: under load it was still
            // starting, a descriptor it closed fell free below the limit, and the socket got it.
            client.submit(RestoreRequest(tag: 1, profileId: "p", originalTransactionId: "1"))
            guard done.wait(timeout: .now() + 30) == .success else { exit(3) }
            // The next request's socket gets EMFILE.
            ResourceLimits.leaveNoDescriptorFree()
            client.submit(RestoreRequest(tag: 2, profileId: "p", originalTransactionId: "1"))
            guard done.wait(timeout: .now() + 30) == .success else { exit(3) }
            FileHandle.standardError.write(Data(message.get().utf8))
            exit(0)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("Too many open files") && stderr.contains("ulimit -n"), "\(stderr)")
        #expect(stderr.contains("not the server"), "\(stderr)")
    }
}

private final class LockedText: @unchecked Sendable {
    // Guarded by `lock`.
    private var text = ""
    private let lock = NSLock()
    func set(_ value: String) { lock.withLock { text = value } }
    func get() -> String { lock.withLock { text } }
}
