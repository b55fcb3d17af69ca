import DocumentKit

if CommandLine.arguments.count > 1, CommandLine.arguments[1].hasPrefix("doc-") {
    DocumentCommands.run(Array(CommandLine.arguments.dropFirst()))
}
