import DocumentKit
import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

#if canImport(Glibc)
    import Glibc
#endif

@Suite(
    "FileVersion: resolving a conflict on one device resolves it on every device", .timeLimit(.minutes(5)))
struct FileVersionResolutionTests {
    @Test(
        "Version changes go through the engine: with the other process's engine stopped one is refused and changes nothing; with it back it is done at once"
    )
    @MainActor
    func changesGoThroughTheEngine() async throws {
        try await withConflict(.external) { conflict in
            let onLaptop = conflict.onLaptop
            let conflicts = try #require(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop))
            let loser = try #require(conflicts.first)
            let others = FileVersion.otherVersionsOfItem(at: onLaptop)?.map(\.persistentIdentifier)

            let engine = try #require(conflict.laptop.engine)
            #expect(await engine.killAndWait(), "the engine died of SIGKILL")
            // Nothing but the engine writes its records: without one, the change is refused, not made behind it.
            #expect { try loser.remove() } throws: { ($0 as? UbiquityError)?.code == .engineUnavailable }
            #expect(FileVersion.otherVersionsOfItem(at: onLaptop)?.map(\.persistentIdentifier) == others)
            #expect(try Conflict.queued(on: conflict.laptop) == 0, "nothing queued for the service either")

            let next = try EngineRecoveryTests.startEngine(for: conflict.laptop, log: "laptop-engine-2")
            #expect(
                await eventually {
                    do {
                        try loser.remove()
                        return true
                    } catch {
                        return false
                    }
                }, "\(next.outputTail())")
            #expect(FileVersion.version(itemAt: onLaptop, forPersistentIdentifier: loser.persistentIdentifier) == nil)
            #expect(await eventually { (try? Conflict.queued(on: conflict.laptop)) == 0 }, "sent by the engine")
            await next.stop(with: SIGTERM, timeout: 20)
        }
    }

    @Test(
        "Keeping the current version (the seeds' steps: mark each conflict resolved, remove the other versions): at once on the laptop, then on the desktop; told once to presenters",
        arguments: EngineMode.allCases)
    @MainActor
    func keepCurrentVersion(mode: EngineMode) async throws {
        try await withConflict(mode) { conflict in
            let (onLaptop, onDesktop) = (conflict.onLaptop, conflict.onDesktop)
            let conflicts = try #require(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop))
            let loser = try #require(conflicts.first)
            let id = loser.persistentIdentifier
            // The steps one after the other, as the seeds make them; each takes effect here at once.
            for version in conflicts { version.isResolved = true }
            #expect(loser.isResolved)
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop)?.isEmpty == true)
            #expect(FileVersion.version(itemAt: onLaptop, forPersistentIdentifier: id)?.isResolved == true)
            try FileVersion.removeOtherVersionsOfItem(at: onLaptop)
            #expect(FileVersion.otherVersionsOfItem(at: onLaptop)?.isEmpty == true)
            #expect(FileVersion.version(itemAt: onLaptop, forPersistentIdentifier: id) == nil)
            #expect(!loser.hasLocalContents)
            #expect(await eventually { !conflict.laptopDocument.documentState.contains(.inConflict) })

            // Everywhere once the service has it.
            #expect(await eventually(.seconds(60)) { !conflict.desktopDocument.documentState.contains(.inConflict) })
            #expect(await eventually { FileVersion.unresolvedConflictVersionsOfItem(at: onDesktop)?.isEmpty == true })
            #expect(await eventually { FileVersion.otherVersionsOfItem(at: onDesktop)?.isEmpty == true })
            #expect(await eventually { (try? Conflict.queued(on: conflict.laptop)) == 0 })
            #expect(Conflict.read(onLaptop) == Conflict.desktopEdit)
            #expect(Conflict.read(onDesktop) == Conflict.desktopEdit)
            #expect(conflict.laptopDocument.name == Conflict.desktopEdit)
            #expect(conflict.desktopDocument.name == Conflict.desktopEdit)

            // When the laptop's engine hears the service's record, it finds it as it already was: nothing is told
            // twice, and the conflict never comes back.
            #expect(try await conflict.settle())
            #expect(conflict.laptopMessages.count("resolved \(id)") == 1, "\(conflict.laptopMessages.log)")
            #expect(conflict.laptopMessages.count("lost \(id)") == 1, "\(conflict.laptopMessages.log)")
            #expect(conflict.laptopMessages.log.last { $0.hasSuffix(id) }?.hasPrefix("gained") == false)
            #expect(conflict.desktopMessages.count("resolved \(id)") == 1, "\(conflict.desktopMessages.log)")
            #expect(!conflict.laptopDocument.documentState.contains(.inConflict))
            #expect(!conflict.desktopDocument.documentState.contains(.inConflict))

            // A version object of a removed version: removing it again is refused; resolving it does nothing.
            #expect(throws: UbiquityError.self) { try loser.remove() }
            loser.isResolved = true
            let current = try #require(FileVersion.currentVersionOfItem(at: onLaptop))
            #expect(throws: UbiquityError.self) { try current.remove() }
        }
    }

    @Test(
        "Picking the conflict version (replace the item with it, mark the conflicts resolved, remove the other versions): its contents on both devices, current everywhere, nothing else kept",
        arguments: EngineMode.allCases)
    @MainActor
    func pickConflictVersion(mode: EngineMode) async throws {
        try await withConflict(mode) { conflict in
            let (onLaptop, onDesktop) = (conflict.onLaptop, conflict.onDesktop)
            let chosen = try #require(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop)?.first)
            _ = try await chosen.contentsURL()
            try Self.resolve(onLaptop, picking: chosen)

            // At once on the laptop.
            #expect(Conflict.read(onLaptop) == Conflict.laptopEdit)
            #expect(FileVersion.currentVersionOfItem(at: onLaptop)?.persistentIdentifier == chosen.persistentIdentifier)
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop)?.isEmpty == true)
            #expect(FileVersion.otherVersionsOfItem(at: onLaptop)?.isEmpty == true)
            #expect(await eventually { conflict.laptopDocument.name == Conflict.laptopEdit })
            #expect(await eventually { !conflict.laptopDocument.documentState.contains(.inConflict) })

            // Then on the desktop: its document reverts to the picked contents and leaves the conflict.
            try await Self.expectPicked(chosen, in: conflict)
            #expect(Conflict.read(onDesktop) == Conflict.laptopEdit)
            // The laptop's presenters heard once that the conflict was resolved, and never of it again.
            #expect(try await conflict.settle())
            let id = chosen.persistentIdentifier
            #expect(conflict.laptopMessages.count("resolved \(id)") == 1, "\(conflict.laptopMessages.log)")
            #expect(conflict.laptopMessages.log.last { $0.hasSuffix(id) } == "resolved \(id)")
        }
    }

    @Test(
        "A conflict resolved on the laptop while the service is down: at once there, queued, and on the desktop once the service is back",
        arguments: EngineMode.allCases)
    @MainActor
    func resolvedOffline(mode: EngineMode) async throws {
        try await withConflict(mode) { conflict in
            let (onLaptop, onDesktop) = (conflict.onLaptop, conflict.onDesktop)
            let chosen = try #require(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop)?.first)
            _ = try await chosen.contentsURL()
            await conflict.service.stop()

            try Self.resolve(onLaptop, picking: chosen)
            #expect(Conflict.read(onLaptop) == Conflict.laptopEdit)
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop)?.isEmpty == true)
            #expect(await eventually { conflict.laptopDocument.name == Conflict.laptopEdit })
            #expect(await eventually { !conflict.laptopDocument.documentState.contains(.inConflict) })
            #expect(try Conflict.queued(on: conflict.laptop) > 0, "the resolution waits in the state database")
            // The desktop cannot have heard of it.
            #expect(conflict.desktopDocument.documentState.contains(.inConflict))
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: onDesktop)?.count == 1)

            try await conflict.service.start()
            try await Self.expectPicked(chosen, in: conflict)
            #expect(await eventually { (try? Conflict.queued(on: conflict.laptop)) == 0 })
            #expect(Conflict.read(onLaptop) == Conflict.laptopEdit)
        }
    }

    /// The seeds' resolution picking `chosen`: replace the item with it, mark every conflict left resolved, remove
    /// the other versions.
    @MainActor
    private static func resolve(_ url: URL, picking chosen: FileVersion) throws {
        #expect(try chosen.replaceItem(at: url) == url)
        for version in FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? [] { version.isResolved = true }
        try FileVersion.removeOtherVersionsOfItem(at: url)
    }

    /// Waits until the desktop shows `chosen` as the item's only version, its contents in the file and the open
    /// document, and the service keeps nothing else.
    @MainActor
    private static func expectPicked(_ chosen: FileVersion, in conflict: Conflict) async throws {
        let onDesktop = conflict.onDesktop
        #expect(await eventually(.seconds(60)) { Conflict.read(onDesktop) == Conflict.laptopEdit })
        #expect(await eventually { conflict.desktopDocument.name == Conflict.laptopEdit })
        #expect(await eventually { !conflict.desktopDocument.documentState.contains(.inConflict) })
        #expect(
            await eventually {
                FileVersion.currentVersionOfItem(at: onDesktop)?.persistentIdentifier == chosen.persistentIdentifier
            })
        #expect(await eventually { FileVersion.unresolvedConflictVersionsOfItem(at: onDesktop)?.isEmpty == true })
        #expect(await eventually { FileVersion.otherVersionsOfItem(at: onDesktop)?.isEmpty == true })
        #expect(await eventually { FileVersion.otherVersionsOfItem(at: conflict.onLaptop)?.isEmpty == true })
        // The service made the picked version current and keeps no other: no upload made a new one.
        let id = try #require(try Conflict.itemID(of: conflict.onLaptop, on: conflict.laptop))
        let client = try await conflict.service.probe()
        var kept: [String] = []
        for _ in 0..<300 {
            kept = try await client.item(id, in: conflict.laptop.container).versions.map(\.id.string)
            if kept == [chosen.persistentIdentifier] { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(kept == [chosen.persistentIdentifier])
        #expect(
            try await client.item(id, in: conflict.laptop.container).item.currentVersion?.string
                == chosen.persistentIdentifier)
    }
}
