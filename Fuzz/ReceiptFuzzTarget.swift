/// libFuzzer entry point for the App Store receipt (PKCS#7) parser (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReceiptInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    InputFuzzHarness.runReceipt(data, size)
}
