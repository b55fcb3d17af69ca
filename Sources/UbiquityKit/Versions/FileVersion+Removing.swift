import Foundation
import SyncEngine
import UbiquityProtocol

extension FileVersion {
    /// Removes this version: from this device at once (its downloaded contents too; an unresolved conflict version
    /// removed counts as resolved), and from the service, hence every device, through the engine's queue — at once
    /// when the service is reachable, when it is back otherwise.
    /// - Throws: ``UbiquityError/Code/failed`` for the current version (replace it with another first);
    ///   ``UbiquityError/Code/unknownVersion`` when the version is no longer one of the item's;
    ///   ``UbiquityError/Code/itemNotFound``, ``UbiquityError/Code/notUbiquitous``,
    ///   ``UbiquityError/Code/engineUnavailable``.
    public func remove() throws {
        guard record != nil else {
            throw UbiquityError(
                .failed, "the current version of \(itemURL.path) cannot be removed; replace it with another first")
        }
        try VersionedItem.locate(itemURL).change(of: itemID, .remove(id))
    }

    /// Removes every version of the item at `url` but the current one — conflict versions (which counts as resolving
    /// them) and old ones — from this device at once and, through the engine's queue, from the service and every
    /// device. The last step of resolving a conflict, as the seeds do it.
    /// - Throws: ``UbiquityError/Code/notUbiquitous`` for a URL outside the app's containers;
    ///   ``UbiquityError/Code/itemNotFound`` when the engine knows no item there;
    ///   ``UbiquityError/Code/engineUnavailable`` when its container is not open yet.
    public class func removeOtherVersionsOfItem(at url: URL) throws {
        let item = try VersionedItem.locate(url)
        guard let state = try item.versions() else {
            throw UbiquityError(.itemNotFound, "no item at \(url.path)")
        }
        try item.change(of: state.item.id, .removeOthers)
    }
}
