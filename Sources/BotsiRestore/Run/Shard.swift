/// Which of N machines handles a profile: FNV-1a (64-bit) of the profileId's UTF-8 bytes, modulo
/// N. Stable across versions and platforms, so every row of one profile lands on one shard.
public func shardIndex(profileId: String, shardCount: Int) -> Int {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in profileId.utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    return Int(hash % UInt64(shardCount))
}

/// `--shard`: which share of the input this process takes, given outright or read from the
/// variables a batch scheduler sets in each of a job's processes.
public enum ShardSpec: Sendable, Equatable {
    /// `I/N`.
    case fixed(index: Int, count: Int)
    /// `auto/N` (or `auto`): the index from `JOB_COMPLETION_INDEX` (a Kubernetes Indexed Job) or
    /// `AWS_BATCH_JOB_ARRAY_INDEX` (an AWS Batch array job), the count given or, on AWS Batch,
    /// from `AWS_BATCH_JOB_ARRAY_SIZE`.
    case fromEnvironment(count: Int?)

    public static let kubernetesIndex = "JOB_COMPLETION_INDEX"
    public static let batchIndex = "AWS_BATCH_JOB_ARRAY_INDEX"
    public static let batchSize = "AWS_BATCH_JOB_ARRAY_SIZE"

    /// "2/4", "auto/4" or "auto"; nil for anything else (an index outside 0..<N included).
    public init?(_ text: String) {
        if text == "auto" {
            self = .fromEnvironment(count: nil)
            return
        }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Int(parts[1]), count >= 1 else { return nil }
        if parts[0] == "auto" {
            self = .fromEnvironment(count: count)
        } else if let index = Int(parts[0]), (0..<count).contains(index) {
            self = .fixed(index: index, count: count)
        } else {
            return nil
        }
    }

    /// This process's shard: for `auto`, from `environment`; the error says which variable is
    /// missing, malformed or contradicts the count.
    public func resolve(environment: [String: String]) throws(ShardError) -> (index: Int, count: Int) {
        guard case .fromEnvironment(let given) = self else {
            if case .fixed(let index, let count) = self { return (index, count) }
            return (0, 1)
        }
        var index: (value: Int, name: String)?
        for name in [Self.kubernetesIndex, Self.batchIndex] {
            guard let text = environment[name] else { continue }
            guard let value = Int(text), value >= 0 else {
                throw ShardError("--shard auto: \(name) is '\(text)', not a shard index (0, 1, 2 ...)")
            }
            if let other = index, other.value != value {
                throw ShardError(
                    "--shard auto: \(other.name)=\(other.value) and \(name)=\(value) disagree; unset the one that "
                        + "does not belong to this scheduler")
            }
            index = (value, name)
        }
        guard let index else {
            throw ShardError(
                "--shard auto reads the shard index from \(Self.kubernetesIndex) (a Kubernetes Indexed Job) or "
                    + "\(Self.batchIndex) (an AWS Batch array job), and neither is set; give the index "
                    + "yourself with --shard I/N")
        }
        var count = given
        if let text = environment[Self.batchSize] {
            guard let size = Int(text), size >= 1 else {
                throw ShardError("--shard auto: \(Self.batchSize) is '\(text)', not a number of shards")
            }
            if let given, given != size {
                throw ShardError(
                    "--shard auto/\(given) says \(given) shards but \(Self.batchSize) says \(size); make them agree")
            }
            count = size
        }
        guard let count else {
            throw ShardError(
                "--shard auto: the number of shards is not in the environment (\(Self.batchSize) is set only by "
                    + "AWS Batch); write it: --shard auto/N, N as the Job's completions")
        }
        guard index.value < count else {
            throw ShardError("--shard auto/\(count): \(index.name) is \(index.value), not below \(count)")
        }
        return (index.value, count)
    }
}

/// Why `--shard auto` could not find this process's shard.
public struct ShardError: Error, CustomStringConvertible {
    public let message: String

    init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
