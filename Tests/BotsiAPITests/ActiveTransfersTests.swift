import Foundation
import Testing

@testable import BotsiAPI

/// The driver finds each finished transfer by the easy handle curl hands back; one it cannot
/// match stops the process loudly instead of leaving the run waiting for it (issue 18, item 7).
@Suite struct ActiveTransfersTests {
    private static func transfer() throws -> Transfer {
        let configuration = ClientConfiguration(
            baseURL: "http://127.0.0.1:9", apiKey: "key", userAgent: "botsi-restore/test")
        let route = try connectionRoute(baseURL: configuration.baseURL, setting: .none, environment: [:])
        return try Transfer(template: RequestTemplate(configuration: configuration, route: route))
    }

    @Test func eachTransferIsFoundByItsEasyHandle() throws {
        let first = try Self.transfer()
        let second = try Self.transfer()
        var active = ActiveTransfers()
        active.insert(first)
        active.insert(second)
        #expect(active.remove(second.easy) === second)
        #expect(active.all.count == 1 && active.all.first === first)
        #expect(active.remove(first.easy) === first)
        #expect(active.all.isEmpty)
    }

    @Test func aFinishedTransferThatWasNeverStartedStopsTheProcess() async {
        await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var active = ActiveTransfers()
            let stranger = try ActiveTransfersTests.transfer()
            _ = active.remove(stranger.easy)
        }
    }
}
