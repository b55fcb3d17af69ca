import ArgumentParser

@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ubiquity-bench", abstract: "Ubiquity's benchmarks.")
}
