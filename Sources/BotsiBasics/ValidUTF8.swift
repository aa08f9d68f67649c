extension UnsafeBufferPointer<UInt8> {
    /// True when the bytes are well-formed UTF-8, that is when `String(decoding:as:)` would keep
    /// them as they are: a writer may then copy bytes read from outside without making a String.
    public var isValidUTF8: Bool {
        var bytes = makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        while true {
            switch parser.parseScalar(from: &bytes) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
