import DocumentKit
import Testing

/// Which names are a save's temporary files: the sync engine skips them and presenters do not hear of them, so a
/// name wrongly taken for one is a document that never syncs, and one missed is junk on every device.
@Suite("Temporary file names")
struct TemporaryFileNameTests {
    @Test(
        "The temporary files of safe saves, editors and downloads are recognised",
        arguments: [
            ".List.txt.1a2b.tmp",  // a safe save's hidden sibling (DocumentKit's)
            ".6F9619FF-8B86-D011-B42D-00C04FC964FF.tmp",  // Foundation's atomic write
            ".List.txt.swp", ".List.txt.swo", ".List.txt.swa", ".swp.swp",  // Vim's swap files
            "4913",  // Vim's test that it may write in the folder
            ".#List.txt", "#List.txt#",  // Emacs's lock and auto-save files
            "List.txt~", "Budget.ods~",  // backups
            ".~lock.Budget.ods#",  // LibreOffice's lock
            "Photo.jpg.part", "Photo.jpg.crdownload",  // partial downloads
        ])
    func temporaryNames(_ name: String) {
        #expect(TemporaryFileName.isTemporary(name))
    }

    @Test(
        "Documents and ordinary hidden files are not taken for temporary files",
        arguments: [
            "List.txt", "Item_1.item", "notes.tmp", "List.tmp.txt",  // a visible `.tmp` is the user's file
            ".gitignore", ".hidden", ".tmp",  // hidden, but not a save's
            "List.swp", ".List.txt.swq", ".List.txt.swz", ".List.txt.sw",  // not Vim's swap names
            "49130", "4913.txt",  // not Vim's write test
            "#1 shopping list", "#", "##",  // a leading `#` alone
            "~", "~List.txt",  // a `~` that is not a backup's ending
            "counterpart", "Photo.jpg.partial", "part",  // `part` not as a partial download's extension
        ])
    func documentNames(_ name: String) {
        #expect(!TemporaryFileName.isTemporary(name))
    }

    @Test("A path component is judged like the same name")
    func substrings() {
        let components = "Documents/Item_1.item/.name.txt.9f3c.tmp/name.txt".split(separator: "/")
        #expect(components.map { TemporaryFileName.isTemporary($0) } == [false, false, true, false])
    }
}
