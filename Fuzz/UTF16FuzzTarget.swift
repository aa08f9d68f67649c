/// libFuzzer entry point for the CSV reader over UTF-16 text (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUTF16Input(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    InputFuzzHarness.runUTF16(data, size)
}
