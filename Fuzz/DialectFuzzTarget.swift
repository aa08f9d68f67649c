/// libFuzzer entry point for the CSV reader with each dialect option (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDialectInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    InputFuzzHarness.runDialect(data, size)
}
