import ArgumentParser

@main
struct Ubiquity: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ubiquity",
        abstract: "Documents that save themselves and sync across your machines.",
        subcommands: [
            DemoCommand.self, ServerCommand.self, LoginCommand.self, SyncCommand.self, ListCommand.self,
            StatusCommand.self,
            DownloadCommand.self, EvictCommand.self, VersionsCommand.self, ResolveCommand.self, KeyValueCommand.self,
        ]
    )
}
