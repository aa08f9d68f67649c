/// libFuzzer entry point for the StoreKit 2 signed-transaction (JWS) parser (see scripts/fuzz.sh).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignedTransactionInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    InputFuzzHarness.runSignedTransaction(data, size)
}
