/// libFuzzer entry point for the JSON-lines reader (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONLinesInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    InputFuzzHarness.run(data, size, format: .jsonl)
}
