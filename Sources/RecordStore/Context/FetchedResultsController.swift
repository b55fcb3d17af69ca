import Foundation
import UbiquityKit

/// What happened to one fetched object.
public enum FetchedResultsChangeType: Sendable, Hashable {
    /// It came into the results.
    case insert
    /// It left them.
    case delete
    /// It moved to another place in them.
    case move
    /// It changed where it was.
    case update
}

/// One change of a controller's results, by object id and place (`[section, row]` index paths).
public struct FetchedResultsChange: Sendable, Hashable {
    /// What happened.
    public var type: FetchedResultsChangeType
    /// The object.
    public var objectID: ManagedObjectID
    /// Where it was (delete, move, update).
    public var indexPath: IndexPath?
    /// Where it is now (insert, move).
    public var newIndexPath: IndexPath?
}

/// Told of a controller's changes, as Core Data's `NSFetchedResultsControllerDelegate`.
public protocol FetchedResultsControllerDelegate<Result>: AnyObject {
    associatedtype Result: ManagedObject
    /// Before the changes of one save or merge.
    func controllerWillChangeContent(_ controller: FetchedResultsController<Result>)
    /// One change; deletes come with their old places, inserts with their new ones.
    func controller(
        _ controller: FetchedResultsController<Result>, didChange object: Result, at indexPath: IndexPath?,
        for type: FetchedResultsChangeType, newIndexPath: IndexPath?)
    /// After the changes of one save or merge.
    func controllerDidChangeContent(_ controller: FetchedResultsController<Result>)
}

extension FetchedResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: FetchedResultsController<Result>) {}
    public func controller(
        _ controller: FetchedResultsController<Result>, didChange object: Result, at indexPath: IndexPath?,
        for type: FetchedResultsChangeType, newIndexPath: IndexPath?
    ) {}
    public func controllerDidChangeContent(_ controller: FetchedResultsController<Result>) {}
}

/// Keeps the results of a fetch request up to date as its context saves and merges, grouped in sections, and
/// tells a delegate (or a stream) what moved, as Core Data's `NSFetchedResultsController`.
///
/// ```swift
/// let controller = FetchedResultsController(
///     fetchRequest: FetchRequest<Tag>(sortDescriptors: [SortDescriptor(\.name)]),
///     managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
/// controller.delegate = self
/// try controller.performFetch()
/// ```
///
/// Results are brought up to date after each ``ManagedObjectContext/save()``, each
/// ``ManagedObjectContext/mergeChanges(fromContextDidSave:)`` (the book merges imports so), each
/// ``ManagedObjectContext/processPendingChanges()``, rollback and reset of the context, on the thread that called it.
public final class FetchedResultsController<Result: ManagedObject> {
    /// One section of the results: objects with the same value of the section key.
    public struct Section {
        /// The section key's value, as text.
        public var name: String
        /// The section's objects, in the request's order.
        public var objects: [Result]
        /// How many objects the section has.
        public var numberOfObjects: Int { objects.count }
    }

    /// The request whose results are kept; its sort descriptors must order objects by section first.
    public let fetchRequest: FetchRequest<Result>
    /// The context the results come from.
    public let managedObjectContext: ManagedObjectContext
    /// The key whose value names each object's section; one section for all when `nil`.
    public let sectionNameKeyPath: String?
    /// Core Data's cache name; accepted, unused.
    public let cacheName: String?
    /// Told of every change after ``performFetch()``.
    public weak var delegate: (any FetchedResultsControllerDelegate<Result>)?

    /// The results, after ``performFetch()``.
    public private(set) var fetchedObjects: [Result]?
    /// The results by section, after ``performFetch()``.
    public private(set) var sections: [Section]?

    private var observation: UUID?
    private let changeStreams = EventBroadcastBox()

    /// Makes a controller; nothing is fetched until ``performFetch()``.
    public init(
        fetchRequest: FetchRequest<Result>, managedObjectContext: ManagedObjectContext, sectionNameKeyPath: String?,
        cacheName: String?
    ) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = managedObjectContext
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
    }

    deinit {
        if let observation { managedObjectContext.removeChangeObserver(observation) }
        changeStreams.broadcast.finish()
    }

    /// Fetches the results and starts keeping them up to date.
    /// - Throws: What ``ManagedObjectContext/fetch(_:)`` throws.
    public func performFetch() throws {
        install(try managedObjectContext.fetch(fetchRequest))
        if observation == nil {
            observation = managedObjectContext.addChangeObserver { [weak self] changes in
                self?.contextDidChange(changes)
            }
        }
    }

    /// Every batch of changes from now on, by object id, for as long as the stream is iterated.
    public func changes() -> AsyncStream<[FetchedResultsChange]> { changeStreams.broadcast.stream() }

    /// The object at `[section, row]`.
    public func object(at indexPath: IndexPath) -> Result {
        sections![indexPath[0]].objects[indexPath[1]]
    }

    /// The place of `object` in the results, `[section, row]`.
    public func indexPath(forObject object: Result) -> IndexPath? {
        for (sectionIndex, section) in (sections ?? []).enumerated() {
            if let row = section.objects.firstIndex(where: { $0 === object }) { return [sectionIndex, row] }
        }
        return nil
    }

    private func install(_ objects: [Result]) {
        fetchedObjects = objects
        var sections: [Section] = []
        for object in objects {
            let name = sectionNameKeyPath.map { key in object.value(forKey: key).map { "\($0)" } ?? "" } ?? ""
            if sections.last?.name == name {
                sections[sections.count - 1].objects.append(object)
            } else {
                sections.append(Section(name: name, objects: [object]))
            }
        }
        self.sections = sections
    }

    private func places() -> [ObjectIdentifier: (IndexPath, Result)] {
        var places: [ObjectIdentifier: (IndexPath, Result)] = [:]
        for (sectionIndex, section) in (sections ?? []).enumerated() {
            for (row, object) in section.objects.enumerated() {
                places[ObjectIdentifier(object)] = ([sectionIndex, row], object)
            }
        }
        return places
    }

    private func contextDidChange(_ changes: ObjectIDChanges) {
        guard fetchedObjects != nil, let objects = try? managedObjectContext.fetch(fetchRequest) else { return }
        let before = places()
        install(objects)
        let after = places()
        var found: [(FetchedResultsChange, Result)] = []
        for (key, (indexPath, object)) in before where after[key] == nil {
            found.append((FetchedResultsChange(type: .delete, objectID: object.objectID, indexPath: indexPath), object))
        }
        for (key, (newIndexPath, object)) in after {
            let change: FetchedResultsChange
            if let (indexPath, _) = before[key] {
                // As Core Data: an object is reported when it changed; one only shifted by others' inserts and
                // deletes is not (a table applies those itself).
                guard changes.updated.contains(object.objectID) || changes.inserted.contains(object.objectID) else {
                    continue
                }
                change =
                    indexPath != newIndexPath
                    ? FetchedResultsChange(
                        type: .move, objectID: object.objectID, indexPath: indexPath, newIndexPath: newIndexPath)
                    : FetchedResultsChange(type: .update, objectID: object.objectID, indexPath: indexPath)
            } else {
                change = FetchedResultsChange(type: .insert, objectID: object.objectID, newIndexPath: newIndexPath)
            }
            found.append((change, object))
        }
        guard !found.isEmpty else { return }
        found.sort { ($0.0.indexPath ?? $0.0.newIndexPath ?? []) < ($1.0.indexPath ?? $1.0.newIndexPath ?? []) }
        delegate?.controllerWillChangeContent(self)
        for (change, object) in found {
            delegate?.controller(
                self, didChange: object, at: change.indexPath, for: change.type, newIndexPath: change.newIndexPath)
        }
        delegate?.controllerDidChangeContent(self)
        changeStreams.broadcast.send(found.map(\.0))
    }
}

/// The stream of a controller's changes (held apart so the generic class needs no static storage).
private final class EventBroadcastBox: Sendable {
    let broadcast = EventBroadcast<[FetchedResultsChange]>()
}
