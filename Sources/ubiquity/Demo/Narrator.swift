import Foundation

/// Prints the demo's story: numbered steps, each reported done with what was observed. Every line is written at
/// once (not buffered), so that the story is told as it happens even into a pipe or a file.
struct Narrator: Sendable {
    func step(_ number: Int, _ title: String) {
        say("\n[\(number)] \(title)")
    }

    func detail(_ text: String) {
        say("    \(text)")
    }

    func done(_ text: String) {
        say("    ✓ \(text)")
    }

    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
