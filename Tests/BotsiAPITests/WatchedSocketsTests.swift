import Testing

@testable import BotsiAPI

/// The epoll calls the driver makes as curl asks for sockets and lets them go: none for a
/// connection's next request, and never a socket left in the set that would report forever.
@Suite struct WatchedSocketsTests {
    private static let input: Int32 = 1
    private static let output: Int32 = 2
    private static let both: Int32 = 3

    /// What curl may ask of the table, and the calls they take.
    private enum Ask {
        case want(Int32, Int32)
        case release(Int32)
    }

    private static func changes(_ asks: [Ask], on sockets: inout WatchedSockets) -> [WatchedSockets.Change] {
        asks.map { ask in
            switch ask {
            case .want(let socket, let interest): sockets.want(socket, for: interest)
            case .release(let socket): sockets.release(socket)
            }
        }
    }

    @Test func aConnectionsNextRequestOnTheSameSocketNeedsNoCall() {
        var sockets = WatchedSockets()
        let first = Self.changes([.want(7, Self.output), .want(7, Self.input), .release(7)], on: &sockets)
        #expect(first == [.add, .modify, .none])
        #expect(sockets.parkedCount == 1)
        let next = Self.changes([.want(7, Self.input)], on: &sockets)
        #expect(next == [.none])
        #expect(sockets.parkedCount == 0)
        #expect(Self.changes([.want(7, Self.both)], on: &sockets) == [.modify])
    }

    @Test func aSocketWatchedForOutputLeavesTheSetWhenReleased() {
        var sockets = WatchedSockets()
        let changes = Self.changes(
            [.want(9, Self.output), .release(9), .want(9, Self.both), .release(9), .release(9)], on: &sockets)
        #expect(changes == [.add, .remove, .add, .remove, .none])
        #expect(sockets.count == 0)
    }

    @Test func aParkedSocketThatReportsLeavesTheTableAndAnActiveOneDoesNot() {
        var sockets = WatchedSockets()
        _ = sockets.want(4, for: Self.input)
        let whileActive = sockets.takeParked(4)
        _ = sockets.release(4)
        let whileParked = sockets.takeParked(4)
        let afterwards = sockets.takeParked(4)
        #expect(!whileActive)
        #expect(whileParked)
        #expect(!afterwards)
        #expect(sockets.count == 0)
        #expect(Self.changes([.want(4, Self.input)], on: &sockets) == [.add])
    }

    /// A closed descriptor's number comes back for the next socket opened: it must be added again,
    /// or the new connection would never report and its request would wait for the timeout.
    @Test func aClosedSocketsNumberStartsAfresh() {
        var sockets = WatchedSockets()
        _ = Self.changes([.want(5, Self.input), .release(5)], on: &sockets)
        sockets.closed(5)
        #expect(sockets.count == 0)
        #expect(Self.changes([.want(5, Self.input)], on: &sockets) == [.add])
        sockets.closed(5)
        #expect(Self.changes([.want(5, Self.input)], on: &sockets) == [.add])
    }
}
