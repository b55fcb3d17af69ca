import Synchronization
import Testing
import UbiquityTestSupport

@testable import SyncEngine

@Suite("Transfer slots bound what uploads hold, first come first served")
struct TransferSlotsTests {
    /// The order in which holders got their slots.
    final class Order: Sendable {
        private let names = Mutex<[String]>([])
        func append(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    /// A holder that takes its slots, says so, and keeps them until let go.
    final class Holder: Sendable {
        private let held = Mutex(false)
        private let gate: AsyncStream<Void>
        private let opening: AsyncStream<Void>.Continuation

        init() { (gate, opening) = AsyncStream.makeStream(of: Void.self) }

        var isHolding: Bool { held.withLock { $0 } }

        /// Takes `count` of `slots`, appends `name` to `order` once it has them, holds them until ``letGo()``.
        func hold(_ count: Int, of slots: TransferSlots, as name: String, order: Order) -> Task<Void, Never> {
            Task {
                await slots.withSlots(count) {
                    order.append(name)
                    held.withLock { $0 = true }
                    for await _ in gate { break }
                    held.withLock { $0 = false }
                }
            }
        }

        func letGo() { opening.yield() }
    }

    @Test("A holder asking for more slots than are free waits, and one asking for few behind it does not pass it")
    func weightedInTurn() async {
        let slots = TransferSlots(4)
        let order = Order()
        let (first, large, small) = (Holder(), Holder(), Holder())
        let firstTask = first.hold(3, of: slots, as: "first", order: order)
        #expect(await eventually { first.isHolding })
        // Three of four are taken: the one asking for all four waits, and the one asking for one waits behind it
        // though a slot is free (else a stream of small holders would keep the large one out for ever).
        let largeTask = large.hold(4, of: slots, as: "large", order: order)
        #expect(await eventually { slots.waitingCount == 1 })
        let smallTask = small.hold(1, of: slots, as: "small", order: order)
        #expect(await eventually { slots.waitingCount == 2 })
        #expect(order.all == ["first"])

        first.letGo()
        await firstTask.value
        #expect(await eventually { large.isHolding })
        #expect(slots.waitingCount == 1)
        large.letGo()
        await largeTask.value
        #expect(await eventually { small.isHolding })
        small.letGo()
        await smallTask.value
        #expect(order.all == ["first", "large", "small"])
        #expect(slots.waitingCount == 0)
    }

    @Test("A holder asking for more slots than there are takes them all, and several small holders share them")
    func capacityAndSharing() async {
        let slots = TransferSlots(4)
        let order = Order()
        let huge = Holder()
        let hugeTask = huge.hold(10, of: slots, as: "huge", order: order)
        #expect(await eventually { huge.isHolding })
        let holders = (0..<4).map { _ in Holder() }
        let tasks = holders.enumerated().map { index, holder in
            holder.hold(1, of: slots, as: "small \(index)", order: order)
        }
        #expect(await eventually { slots.waitingCount == 4 })
        huge.letGo()
        await hugeTask.value
        // Four free slots serve all four waiting holders of one at once.
        #expect(await eventually { holders.allSatisfy(\.isHolding) })
        #expect(slots.waitingCount == 0)
        for holder in holders { holder.letGo() }
        for task in tasks { await task.value }
        #expect(order.all.count == 5)
    }
}
