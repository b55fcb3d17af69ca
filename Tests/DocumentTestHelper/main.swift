import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// A child process for the cross-process tests: `document-test-helper <command> <arguments…>`.
// Each area's commands live in their own file; this only dispatches. Unknown commands exit with 64 (EX_USAGE).
let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { exit(64) }
let rest = Array(arguments.dropFirst())

switch command {
case "coord-hold-write": CoordinationCommands.holdWrite(rest)
case "coord-hold-read": CoordinationCommands.holdRead(rest)
case "coord-safe-save": CoordinationCommands.safeSave(rest)
case "coord-move": CoordinationCommands.move(rest)
case "coord-delete": CoordinationCommands.delete(rest)
case _ where command.hasPrefix("doc-"): DocumentCommands.run(arguments)
default: exit(64)
}
