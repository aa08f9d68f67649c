/// libFuzzer entry point for the CSV reader (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSVInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    InputFuzzHarness.run(data, size, format: .csv)
}
