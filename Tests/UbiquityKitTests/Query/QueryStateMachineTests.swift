import Foundation
import Testing
import UbiquityProtocol

@testable import UbiquityKit

@Suite("Query state machine")
struct QueryStateMachineTests {
    typealias F = QueryFixtures

    /// A machine started and done gathering `items`, and its generation.
    static func live(_ items: [MetadataItem] = [], batching: Duration = .zero) -> (QueryStateMachine, Int) {
        var machine = QueryStateMachine()
        machine.batchingInterval = batching
        let generation = machine.start(sort: QuerySort([SortDescriptor(\.fileName)]))!
        _ = machine.finishGathering(items, generation: generation)
        #expect(machine.gathered(generation: generation) == .none)
        return (machine, generation)
    }

    @Test("Changes heard while gathering wait for it, then one flush tells them")
    func heardWhileGathering() throws {
        var machine = QueryStateMachine()
        let started = machine.start(sort: QuerySort())
        let generation = try #require(started)
        #expect(machine.phase == .gathering)
        let late = F.item("Documents/late.txt")
        #expect(machine.heard(late.id, late, generation: generation) == .none)
        #expect(machine.flush(generation: generation) == nil)
        let gathered = machine.finishGathering([F.item("Documents/first.txt")], generation: generation)
        #expect(gathered?.map(\.fileName) == ["first.txt"])
        #expect(machine.phase == .live)
        #expect(machine.gathered(generation: generation) == .flush)
        let flushed = machine.flush(generation: generation)
        let update = try #require(flushed)
        #expect(update.added.map(\.fileName) == ["late.txt"])
        #expect(machine.results.ordered.map(\.fileName) == ["first.txt", "late.txt"])
    }

    @Test("Without batching the first change asks for a flush; changes until it runs go with it")
    func flushNow() throws {
        var (machine, generation) = Self.live()
        let (a, b) = (F.item("Documents/a"), F.item("Documents/b"))
        #expect(machine.heard(a.id, a, generation: generation) == .flush)
        #expect(machine.heard(b.id, b, generation: generation) == .none)
        let flushed = machine.flush(generation: generation)
        let update = try #require(flushed)
        #expect(update.added.map(\.fileName) == ["a", "b"])
        #expect(machine.pendingCount == 0)
        let c = F.item("Documents/c")
        #expect(machine.heard(c.id, c, generation: generation) == .flush)
    }

    @Test("With a batching interval the first change starts it and later ones wait for the same flush")
    func batching() throws {
        var (machine, generation) = Self.live(batching: .seconds(2))
        let items = (0..<3).map { F.item("Documents/\($0)") }
        #expect(machine.heard(items[0].id, items[0], generation: generation) == .flushAfter(.seconds(2)))
        for item in items.dropFirst() { #expect(machine.heard(item.id, item, generation: generation) == .none) }
        let flushed = machine.flush(generation: generation)
        let update = try #require(flushed)
        #expect(update.added.count == 3)
        let next = F.item("Documents/next")
        #expect(machine.heard(next.id, next, generation: generation) == .flushAfter(.seconds(2)))
    }

    @Test("Disabled updates hold changes, even past a flush; enabling (every nested disable matched) flushes at once")
    func holding() throws {
        let kept = F.item("Documents/kept")
        var (machine, generation) = Self.live([kept], batching: .seconds(1))
        machine.disableUpdates()
        machine.disableUpdates()
        let added = F.item("Documents/added")
        #expect(machine.heard(added.id, added, generation: generation) == .none)
        #expect(machine.heard(kept.id, nil, generation: generation) == .none)
        #expect(machine.flush(generation: generation) == nil)
        #expect(machine.results.ordered.map(\.fileName) == ["kept"])
        #expect(machine.enableUpdates() == .none)
        #expect(machine.isHolding)
        #expect(machine.enableUpdates() == .flush)
        let flushed = machine.flush(generation: generation)
        let update = try #require(flushed)
        #expect(update.added.map(\.fileName) == ["added"])
        #expect(update.removed.map(\.fileName) == ["kept"])
        #expect(machine.enableUpdates() == .none)
    }

    @Test("Enabling while a batching flush is on its way leaves it to that flush")
    func enableDuringInterval() {
        var (machine, generation) = Self.live(batching: .seconds(1))
        let item = F.item("Documents/x")
        #expect(machine.heard(item.id, item, generation: generation) == .flushAfter(.seconds(1)))
        machine.disableUpdates()
        #expect(machine.enableUpdates() == .none)
        #expect(machine.flush(generation: generation)?.added.count == 1)
    }

    @Test("An item that leaves and was never a result is not heard; one that comes and goes before a flush is not told")
    func noise() {
        var (machine, generation) = Self.live()
        #expect(machine.heard(ItemID(), nil, generation: generation) == .none)
        let brief = F.item("Documents/brief")
        #expect(machine.heard(brief.id, brief, generation: generation) == .flush)
        #expect(machine.heard(brief.id, nil, generation: generation) == .none)
        #expect(machine.flush(generation: generation) == nil)
        #expect(machine.results.count == 0)
    }

    @Test("A new run (a changed predicate) empties the results; what the older run still says is ignored")
    func generations() throws {
        let old = F.item("Documents/old")
        var (machine, first) = Self.live([old])
        let heard = F.item("Documents/heard")
        #expect(machine.heard(heard.id, heard, generation: first) == .flush)
        let restarted = machine.start(sort: QuerySort())
        let second = try #require(restarted)
        #expect(second != first)
        #expect(machine.results.count == 0)
        #expect(machine.flush(generation: first) == nil)
        #expect(machine.finishGathering([old], generation: first) == nil)
        #expect(machine.heard(heard.id, heard, generation: first) == .none)
        #expect(machine.finishGathering([old], generation: second)?.count == 1)
    }

    @Test("Stopped: nothing heard or told, results kept, no restart")
    func stopping() {
        let kept = F.item("Documents/kept")
        var (machine, generation) = Self.live([kept])
        machine.stop()
        let item = F.item("Documents/x")
        #expect(machine.heard(item.id, item, generation: generation) == .none)
        #expect(machine.flush(generation: generation) == nil)
        #expect(machine.results.ordered.map(\.fileName) == ["kept"])
        #expect(machine.start(sort: QuerySort()) == nil)
    }

    @Test("Replacing a container's items removes its results not among them, and leaves other containers' alone")
    func replacingAContainer() throws {
        let stays = F.item("Documents/stays")
        let goes = F.item("Documents/goes")
        let elsewhere = F.item("Documents/elsewhere", in: F.otherContainer)
        var (machine, generation) = Self.live([stays, goes, elsewhere])
        let arrives = F.item("Documents/arrives")
        let action = machine.replace(
            container: F.container.string, with: [stays, arrives], generation: generation)
        #expect(action == .flush)
        let flushed = machine.flush(generation: generation)
        let update = try #require(flushed)
        #expect(update.added.map(\.fileName) == ["arrives"])
        #expect(update.removed.map(\.fileName) == ["goes"])
        #expect(update.changed.isEmpty)
        #expect(machine.results.ordered.map(\.fileName) == ["arrives", "elsewhere", "stays"])
    }
}
