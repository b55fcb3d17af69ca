import DocumentKit
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `package.save`: saving a 100-member package (64 KiB members) through ``Document`` after one member changed —
/// the wrapper tree read from disk, so the 99 unchanged members are hard-linked from the saved package — against
/// saving the same package rewritten whole from fresh in-memory wrappers. Interleaved, median per save.
@MainActor
enum PackageSaveBenchmark {
    nonisolated static let name = "package.save"
    static let memberCount = 100
    static let memberSize = 64 * 1024
    static let iterations = 20

    static func run(in scratch: URL) async throws {
        let members = (0..<memberCount).map { noiseBytes(count: memberSize, seed: UInt64($0)) }
        let names = (0..<memberCount).map { String(format: "m%03d.bin", $0) }

        let incrementalURL = scratch.appendingPathComponent("incremental.pkg")
        let wholeURL = scratch.appendingPathComponent("whole.pkg")
        for url in [incrementalURL, wholeURL] {
            let creator = PackageDocument(fileURL: url, root: freshPackage(names: names, members: members))
            try await creator.saveDocument(to: url, for: .forCreating)
            await creator.close()
        }
        // The incremental document reads its tree from disk, so its members know the files they came from.
        let incremental = PackageDocument(fileURL: incrementalURL, root: FileWrapper(directoryWithFileWrappers: [:]))
        try await incremental.openDocument()
        let whole = PackageDocument(fileURL: wholeURL, root: FileWrapper(directoryWithFileWrappers: [:]))
        try await whole.openDocument()
        for document in [incremental, whole] { document.autosaveDelay = .seconds(86_400) }

        var incrementalTimes: [Duration] = []
        var wholeTimes: [Duration] = []
        var linkedMembers: [Int] = []
        let clock = ContinuousClock()
        let warmUp = 2
        for iteration in 0..<(warmUp + iterations) {
            let changed = iteration % memberCount
            let newMember = noiseBytes(count: memberSize, seed: UInt64(1_000 + iteration))
            for incrementalFirst in iteration % 2 == 0 ? [true, false] : [false, true] {
                if incrementalFirst {
                    let root = incremental.root
                    if let old = root.fileWrappers?[names[changed]] { root.removeFileWrapper(old) }
                    _ = root.addRegularFile(withContents: newMember, preferredFilename: names[changed])
                    let inodesBefore = inodes(in: incrementalURL, names: names)
                    incremental.updateChangeCount(.done)
                    let start = clock.now
                    try await incremental.saveDocument(to: incrementalURL, for: .forOverwriting)
                    let time = clock.now - start
                    let inodesAfter = inodes(in: incrementalURL, names: names)
                    if iteration >= warmUp {
                        incrementalTimes.append(time)
                        linkedMembers.append(zip(inodesBefore, inodesAfter).filter { $0 == $1 }.count)
                    }
                } else {
                    var fresh = members
                    fresh[changed] = newMember
                    whole.root = freshPackage(names: names, members: fresh)
                    whole.updateChangeCount(.done)
                    let start = clock.now
                    try await whole.saveDocument(to: wholeURL, for: .forOverwriting)
                    let time = clock.now - start
                    if iteration >= warmUp { wholeTimes.append(time) }
                }
            }
        }
        await incremental.close()
        await whole.close()

        let incrementalMedian = Measure.microseconds(Measure.median(incrementalTimes))
        let wholeMedian = Measure.microseconds(Measure.median(wholeTimes))
        let caseName = "\(memberCount)x64KiB_1changed"
        BenchOutput.figure(bench: name, case: caseName, metric: "median_us_incremental", value: incrementalMedian)
        BenchOutput.figure(bench: name, case: caseName, metric: "median_us_whole_rewrite", value: wholeMedian)
        BenchOutput.figure(
            bench: name, case: caseName, metric: "ratio_incremental_vs_whole", value: incrementalMedian / wholeMedian)
        // How many of the 99 unchanged members the incremental saves kept by hard link rather than wrote again.
        let linked = linkedMembers.sorted()
        BenchOutput.figure(bench: name, case: caseName, metric: "min_members_hard_linked", value: Double(linked[0]))
        BenchOutput.figure(
            bench: name, case: caseName, metric: "median_members_hard_linked", value: Double(linked[linked.count / 2]))
    }

    /// A package of fresh in-memory wrappers, which know no file they came from.
    private static func freshPackage(names: [String], members: [Data]) -> FileWrapper {
        FileWrapper(
            directoryWithFileWrappers: Dictionary(
                uniqueKeysWithValues: zip(names, members.map { FileWrapper(regularFileWithContents: $0) })))
    }

    /// The inode numbers of the members, to count how many a save kept (hard-linked) rather than wrote anew.
    private static func inodes(in package: URL, names: [String]) -> [UInt64] {
        names.map { name in
            var status = stat()
            guard lstat(package.appendingPathComponent(name).path, &status) == 0 else { return 0 }
            return UInt64(status.st_ino)
        }
    }
}

/// A package document whose model is its wrapper tree.
final class PackageDocument: Document {
    var root: FileWrapper

    init(fileURL url: URL, root: FileWrapper) {
        self.root = root
        super.init(fileURL: url)
    }

    override func contents(forType typeName: String) throws -> Any { root }

    override func load(fromContents contents: Any, ofType typeName: String?) throws {
        guard let wrapper = contents as? FileWrapper else { throw CocoaError(.fileReadCorruptFile) }
        root = wrapper
    }
}
