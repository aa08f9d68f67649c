/// libFuzzer entry point for the JSON-array reader (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONArrayInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    InputFuzzHarness.run(data, size, format: .json)
}
