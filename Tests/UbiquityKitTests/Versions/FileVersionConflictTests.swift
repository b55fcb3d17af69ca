import DocumentKit
import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("FileVersion: conflicts as both devices see them", .timeLimit(.minutes(5)))
struct FileVersionConflictTests {
    @Test(
        "Saved on both devices from the same base: both documents in conflict, the same conflict and current versions on both, each naming the device that saved it, contents readable on demand",
        arguments: EngineMode.allCases)
    @MainActor
    func conflictSeenOnBothDevices(mode: EngineMode) async throws {
        try await withConflict(mode) { conflict in
            let (onLaptop, onDesktop) = (conflict.onLaptop, conflict.onDesktop)
            let laptopConflicts = try #require(FileVersion.unresolvedConflictVersionsOfItem(at: onLaptop))
            try #require(laptopConflicts.count == 1)
            let version = laptopConflicts[0]
            #expect(version.isConflict)
            #expect(!version.isResolved)
            #expect(version.localizedNameOfSavingComputer == "laptop")
            #expect(version.localizedName == Conflict.name)
            #expect(version.modificationDate != nil)

            // The same versions, by the same identifiers, on the desktop.
            #expect(
                await eventually {
                    FileVersion.unresolvedConflictVersionsOfItem(at: onDesktop)?.map(\.persistentIdentifier) == [
                        version.persistentIdentifier
                    ]
                })
            let mirrored = try #require(FileVersion.unresolvedConflictVersionsOfItem(at: onDesktop)?.first)
            #expect(mirrored.localizedNameOfSavingComputer == "laptop")
            #expect(mirrored.modificationDate == version.modificationDate)
            let current = try #require(FileVersion.currentVersionOfItem(at: onLaptop))
            #expect(
                await eventually {
                    FileVersion.currentVersionOfItem(at: onDesktop)?.persistentIdentifier
                        == current.persistentIdentifier
                })
            #expect(current.persistentIdentifier != version.persistentIdentifier)
            #expect(!current.isConflict && current.isResolved)
            #expect(current.url == onLaptop)
            #expect(Conflict.read(current.url) == Conflict.desktopEdit)
            #expect(
                Conflict.read(try #require(FileVersion.currentVersionOfItem(at: onDesktop)).url) == Conflict.desktopEdit
            )
            #expect(
                FileVersion.otherVersionsOfItem(at: onDesktop)?.contains {
                    $0.persistentIdentifier == version.persistentIdentifier
                } == true)
            let found = try #require(
                FileVersion.version(itemAt: onDesktop, forPersistentIdentifier: version.persistentIdentifier))
            #expect(found.isConflict && found.localizedNameOfSavingComputer == "laptop")
            #expect(
                FileVersion.version(itemAt: onDesktop, forPersistentIdentifier: current.persistentIdentifier)?.url
                    == onDesktop)

            // The conflict version's contents are not here until asked for; replacing with them needs them first,
            // and a refused replace changes nothing.
            #expect(!mirrored.hasLocalContents)
            #expect(throws: UbiquityError.self) { try mirrored.replaceItem(at: onDesktop) }
            do {
                try mirrored.replaceItem(at: onDesktop)
            } catch let error as UbiquityError {
                #expect(error.code == .notDownloaded)
            }
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: onDesktop)?.count == 1)
            #expect(Conflict.read(onDesktop) == Conflict.desktopEdit)

            // Downloaded on demand, into the container's private folder, never into Documents/.
            let copy = try await mirrored.contentsURL()
            #expect(copy == mirrored.url)
            #expect(mirrored.hasLocalContents)
            #expect(Conflict.read(copy) == Conflict.laptopEdit)
            #expect(copy.path.hasPrefix(conflict.desktop.folder.appendingPathComponent(".ubiquity").path))
            #expect(Conflict.read(try await version.contentsURL()) == Conflict.laptopEdit)
            for device in [conflict.laptop, conflict.desktop] {
                #expect(try FileManager.default.contentsOfDirectory(atPath: device.documents.path) == [Conflict.name])
            }

            // Nothing was resolved by looking.
            #expect(conflict.laptopDocument.documentState.contains(.inConflict))
            #expect(conflict.desktopDocument.documentState.contains(.inConflict))
            #expect(try Conflict.queued(on: conflict.laptop) == 0)
        }
    }
}
