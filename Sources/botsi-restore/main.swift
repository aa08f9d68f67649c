import BotsiCLI
