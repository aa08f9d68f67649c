extension SimulatorScenario {
    /// A reply served for one transaction instead of the restore, to rehearse replies the real service
    /// (or a proxy in front of it) may send but the restore logic never produces.
    ///
    /// It is decided after the key, body, mode and rate-limit checks and before the fault draw, it
    /// changes no restore state, and the latency applies as to any restore. Which keys apply depends on
    /// `kind`; a key that does not apply is refused, so a file says exactly what it does.
    public struct FixedReply: Sendable, Codable, Equatable {
        public enum Kind: String, Sendable, Codable, CaseIterable {
            /// `status` (400–599) with `{"error": message, "code": code}`; without `code` the body has no code.
            case error
            /// `status` (default 200) with an nginx-style HTML page, not JSON.
            case html
            /// 200 whose valid JSON body is `bytes` long (default 4 MiB).
            case hugeBody
            /// 200 whose body is cut-off, unquoted JSON.
            case invalidJSON
            /// 200 `{"ok": false, "error": message, "data": null}`.
            case okFalse
            /// 200 without a length whose body never ends: a few bytes every `intervalMilliseconds`.
            case neverEndingBody
            /// 200 with `bytes` of extra header lines, `lineBytes` each, then the profile as it is now.
            case hugeHeaders
            /// `status` (default 302) with `Location: location` and an empty body.
            case redirect
        }

        public var originalTransactionId: String
        public var kind: Kind
        public var status: Int?
        public var code: String?
        public var message: String?
        public var retryAfterSeconds: Int?
        public var bytes: Int?
        public var lineBytes: Int?
        /// `hugeBody` only: false sends no `Content-Length` (the body ends when the connection closes), so
        /// a client cannot refuse it up front and must count what it reads.
        public var contentLength: Bool?
        public var intervalMilliseconds: Double?
        public var location: String?

        public init(
            originalTransactionId: String, kind: Kind = .error, status: Int? = nil, code: String? = nil,
            message: String? = nil, retryAfterSeconds: Int? = nil, bytes: Int? = nil, lineBytes: Int? = nil,
            contentLength: Bool? = nil, intervalMilliseconds: Double? = nil, location: String? = nil
        ) {
            self.originalTransactionId = originalTransactionId
            self.kind = kind
            self.status = status
            self.code = code
            self.message = message
            self.retryAfterSeconds = retryAfterSeconds
            self.bytes = bytes
            self.lineBytes = lineBytes
            self.contentLength = contentLength
            self.intervalMilliseconds = intervalMilliseconds
            self.location = location
        }

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case originalTransactionId, kind, status, code, message, retryAfterSeconds, bytes, lineBytes
            case contentLength, intervalMilliseconds, location
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                originalTransactionId: try container.decode(String.self, forKey: .originalTransactionId),
                kind: try container.decodeIfPresent(Kind.self, forKey: .kind) ?? .error,
                status: try container.decodeIfPresent(Int.self, forKey: .status),
                code: try container.decodeIfPresent(String.self, forKey: .code),
                message: try container.decodeIfPresent(String.self, forKey: .message),
                retryAfterSeconds: try container.decodeIfPresent(Int.self, forKey: .retryAfterSeconds),
                bytes: try container.decodeIfPresent(Int.self, forKey: .bytes),
                lineBytes: try container.decodeIfPresent(Int.self, forKey: .lineBytes),
                contentLength: try container.decodeIfPresent(Bool.self, forKey: .contentLength),
                intervalMilliseconds: try container.decodeIfPresent(Double.self, forKey: .intervalMilliseconds),
                location: try container.decodeIfPresent(String.self, forKey: .location))
        }

        static let knownKeys = Set(CodingKeys.allCases.map(\.stringValue))

        public static let defaultHugeBodyBytes = 4 << 20
        public static let defaultHugeHeaderBytes = 1 << 20
        public static let defaultHeaderLineBytes = 1024
        public static let defaultIntervalMilliseconds = 100.0

        /// The status line the reply carries.
        public var effectiveStatus: Int {
            switch kind {
            case .error: status ?? 0
            case .html: status ?? 200
            case .redirect: status ?? 302
            case .hugeBody, .invalidJSON, .okFalse, .neverEndingBody, .hugeHeaders: 200
            }
        }

        /// The keys, besides `originalTransactionId` and `kind`, that mean something for `kind`.
        private var applicableKeys: Set<CodingKeys> {
            switch kind {
            case .error: [.status, .code, .message, .retryAfterSeconds]
            case .html: [.status]
            case .hugeBody: [.bytes, .contentLength]
            case .invalidJSON: []
            case .okFalse: [.message]
            case .neverEndingBody: [.intervalMilliseconds]
            case .hugeHeaders: [.bytes, .lineBytes]
            case .redirect: [.status, .location]
            }
        }

        private var presentKeys: [CodingKeys] {
            let present: [(CodingKeys, Bool)] = [
                (.status, status != nil), (.code, code != nil), (.message, message != nil),
                (.retryAfterSeconds, retryAfterSeconds != nil), (.bytes, bytes != nil),
                (.lineBytes, lineBytes != nil), (.contentLength, contentLength != nil),
                (.intervalMilliseconds, intervalMilliseconds != nil), (.location, location != nil),
            ]
            return present.filter(\.1).map(\.0)
        }

        func validate(at place: String) throws {
            guard !originalTransactionId.isEmpty else {
                throw SimulatorScenarioError("\(place) has an empty originalTransactionId")
            }
            let name = "\(place) ('\(originalTransactionId)', kind '\(kind.rawValue)')"
            if let stray = presentKeys.first(where: { !applicableKeys.contains($0) }) {
                let applicable = applicableKeys.map(\.stringValue).sorted()
                throw SimulatorScenarioError(
                    "\(name): '\(stray.stringValue)' does not apply to this kind; it takes "
                        + (applicable.isEmpty ? "no other keys" : applicable.joined(separator: ", ")))
            }
            func require(_ condition: Bool, _ problem: String) throws {
                if !condition { throw SimulatorScenarioError("\(name): \(problem)") }
            }
            switch kind {
            case .error:
                try require(status != nil, "status is required (400–599)")
                try require((400...599).contains(effectiveStatus), "status must be 400–599")
            case .html:
                try require((200...599).contains(effectiveStatus), "status must be 200–599")
            case .redirect:
                try require((300...399).contains(effectiveStatus), "status must be 300–399")
                try require(location.map { !$0.isEmpty } == true, "location is required")
            case .hugeBody:
                try require((1...(256 << 20)).contains(bytes ?? 1), "bytes must be 1 to 268435456")
            case .hugeHeaders:
                let total = bytes ?? Self.defaultHugeHeaderBytes
                try require((1...(64 << 20)).contains(total), "bytes must be 1 to 67108864")
                try require(
                    (16...max(16, total)).contains(lineBytes ?? Self.defaultHeaderLineBytes),
                    "lineBytes must be at least 16 and at most bytes")
            case .neverEndingBody:
                let interval = intervalMilliseconds ?? Self.defaultIntervalMilliseconds
                try require(interval > 0 && interval <= 60_000, "intervalMilliseconds must be above 0, at most 60000")
            case .invalidJSON, .okFalse:
                break
            }
            try require(retryAfterSeconds.map { $0 >= 0 } ?? true, "retryAfterSeconds must not be negative")
            try require(code.map { !$0.isEmpty } ?? true, "code must not be empty")
            // It becomes a header line: a line break would forge headers.
            try require(
                !(location ?? "").unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
                "location must not contain control characters")
        }
    }
}
