import BotsiCLI
import Foundation

exit(CLI.main(arguments: CommandLine.arguments))
