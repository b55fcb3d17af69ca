import Foundation
import SyncEngine
import Testing
import UbiquityKit
import UbiquityProtocol
import UbiquityTestSupport

@Suite("A container folder set up before and gone now", .timeLimit(.minutes(5)))
struct ContainerFolderMissingTests {
    @Test(
        "An app's embedded engine refuses it, making nothing, until the app forgets the folder; then it is set up afresh with the account's files"
    )
    func refusedUntilForgotten() async throws {
        let service = try await LocalService.start()
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ubiquity-missing-\(UUID().uuidString.prefix(8))", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let container = try ContainerID("TEAM.com.example.grocery")
        let client = try await service.signIn(account: "ada", device: "laptop")
        let configuration = UbiquityConfiguration(
            root: home.appendingPathComponent("disk/ubiquity", isDirectory: true), containers: [container],
            profile: DeviceProfile(
                server: service.baseURL, account: "ada", token: try #require(client.token),
                device: SavingDevice(id: DeviceID(), name: "laptop")),
            engine: .embedded,
            containerFolders: ContainerFolderRegister(folder: home.appendingPathComponent("config/containers")))

        // The app's first launch sets the container up; a list is saved and goes up.
        let first = Ubiquity(configuration: configuration)
        let folder = try #require(try await first.containerURL(forIdentifier: nil))
        try Data("milk".utf8).write(to: folder.appendingPathComponent("Documents/List.txt"))
        try await first.synchronize()
        await first.shutdown()

        // At the next launch the folder's disk is not mounted: its mount point is there, empty.
        let disk = home.appendingPathComponent("disk")
        let unmounted = home.appendingPathComponent("unmounted")
        try FileManager.default.moveItem(at: disk, to: unmounted)
        try FileManager.default.createDirectory(at: disk, withIntermediateDirectories: true)
        let second = Ubiquity(configuration: configuration)
        do {
            _ = try await second.containerURL(forIdentifier: nil)
            Issue.record("the missing folder was set up afresh")
        } catch let error as UbiquityError {
            #expect(error.code == .containerFolderMissing, "\(error)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path).isEmpty, "made on the disk below")

        // The user chooses to set it up afresh here: the account's files come back.
        try second.forgetContainerFolder(identifier: nil)
        #expect(throws: UbiquityError.self) { try second.forgetContainerFolder(identifier: "TEAM.com.example.other") }
        #expect(try await second.containerURL(forIdentifier: nil) == folder)
        try await second.synchronize()
        #expect(try Data(contentsOf: folder.appendingPathComponent("Documents/List.txt")) == Data("milk".utf8))
        await second.shutdown()
    }
}
