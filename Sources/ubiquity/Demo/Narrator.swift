import Foundation

/// Prints the demo's story: numbered steps, each reported done with what was observed.
struct Narrator: Sendable {
    func step(_ number: Int, _ title: String) {
        print("\n[\(number)] \(title)")
    }

    func detail(_ text: String) {
        print("    \(text)")
    }

    func done(_ text: String) {
        print("    ✓ \(text)")
    }
}
