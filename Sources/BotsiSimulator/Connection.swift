import Dispatch

// The per-connection state a `ServerLoop` keeps (its deadlines are in `LoopTimers.swift`).

/// One client connection; owned by the loop's queue.
final class Connection: @unchecked Sendable {
    // Invariant for @unchecked Sendable: touched only on the owning ServerLoop's queue, from the loop's
    // methods, whose every entry checks that queue at run time (`dispatchPrecondition`).
    enum Phase {
        case reading, waiting, stalled, writing, trickling
    }

    let id: UInt64
    let descriptor: Int32
    var readSource: DispatchSourceRead?
    var writeSource: DispatchSourceWrite?
    var liveSources = 0
    var inbound: [UInt8] = []
    var outbound: [UInt8] = []
    var outboundOffset = 0
    var closeAfterWrite = false
    var phase = Phase.reading
    var pendingAction: ReplyPlan.Action?
    /// Set while a never-ending body is being sent.
    var trickle: Trickle?
    var generation: UInt64 = 0
    /// Kernel receive time (uptime clock) of the chunk that began the buffered request, when known.
    var requestArrival: UInt64?
    var inFlight: InFlightToken?
    var sentContinue = false
    /// Leading bytes of `inbound` already searched for the end of the head (see `HTTPParser.parse`).
    var headSearched = 0
    var insideProcessing = false
    var closed = false
    /// Uptime when the current reading or writing phase began, or the client last took part of a reply.
    var idleSince: UInt64 = 0
    /// Whether the heap holds this connection's idle deadline.
    var idleDeadlinePending = false

    init(id: UInt64, descriptor: Int32) {
        self.id = id
        self.descriptor = descriptor
        inbound.reserveCapacity(1024)
    }
}

extension HTTPRequestHead.Route {
    var isRestore: Bool {
        if case .restore = self { return true }
        return false
    }
}

struct Trickle {
    let chunk: [UInt8]
    let intervalNanoseconds: UInt64
}
