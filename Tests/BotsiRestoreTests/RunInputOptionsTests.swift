import BotsiInput
import BotsiRestore
import Testing

@Suite("run options reach the input reader")
struct RunInputOptionsTests {
    @Test func inputOptionsReachTheReader() {
        var options = RunOptions()
        options.noHeader = true
        options.profileColumn = "3"
        options.delimiter = "tab"
        options.encoding = "cp1252"
        options.environment = "production"
        let input = options.inputOptions
        #expect(!input.hasHeader && input.positions?.profile == 3 && input.positions?.transaction == 2)
        #expect(input.delimiter == 0x09 && input.encoding == .windows1252 && input.environment == .production)
        #expect(RunOptions.delimiterByte("a") == nil && RunOptions.delimiterByte("\"") == nil)
        #expect(RunOptions.delimiterByte("|") == UInt8(ascii: "|"))
    }
}
