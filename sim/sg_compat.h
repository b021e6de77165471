// Every SimGrid call whose spelling differs between 3.32 (Debian 12) and 4.x, behind one small header,
// plus the guard that every actor body runs in.
#pragma once

#include <exception>
#include <functional>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace deepinfer::sim::sg {

namespace sg4 = simgrid::s4u;

/// Creates a zone under `parent` (nullptr: the root zone). 3.32 and 4.x both accept
/// create_*_zone + set_parent; 4.x prefers parent->add_netzone_*.
inline sg4::NetZone* make_star_zone(const std::string& name, sg4::NetZone* parent) {
    sg4::NetZone* z = sg4::create_star_zone(name);
    if (parent != nullptr) z->set_parent(parent);
    return z;
}
inline sg4::NetZone* make_full_zone(const std::string& name, sg4::NetZone* parent) {
    sg4::NetZone* z = sg4::create_full_zone(name);
    if (parent != nullptr) z->set_parent(parent);
    return z;
}

/// The netpoint of a zone's gateway router. 3.32 has no NetZone::set_gateway: the router is added as
/// a member of the star with its own route to the centre.
inline simgrid::kernel::routing::NetPoint* make_gateway(sg4::NetZone* zone, const std::string& name,
                                                        const sg4::Link* uplink) {
    auto* router = zone->create_router(name);
    std::vector<sg4::LinkInRoute> links;
    if (uplink != nullptr) links.emplace_back(uplink);
    zone->add_route(router, nullptr, nullptr, nullptr, links, true);
    return router;
}

/// Route from a star member to the centre of its star zone.
inline void add_star_route(sg4::NetZone* zone, simgrid::kernel::routing::NetPoint* member,
                           const std::vector<const sg4::Link*>& links) {
    std::vector<sg4::LinkInRoute> in_route;
    for (const sg4::Link* l : links) in_route.emplace_back(l);
    zone->add_route(member, nullptr, nullptr, nullptr, in_route, true);
}

/// Route between two sub-zones of a full zone through their gateways.
inline void add_zone_route(sg4::NetZone* zone, sg4::NetZone* a, simgrid::kernel::routing::NetPoint* gw_a,
                           sg4::NetZone* b, simgrid::kernel::routing::NetPoint* gw_b,
                           const std::vector<const sg4::Link*>& links) {
    std::vector<sg4::LinkInRoute> in_route;
    for (const sg4::Link* l : links) in_route.emplace_back(l);
    zone->add_route(a->get_netpoint(), b->get_netpoint(), gw_a, gw_b, in_route, true);
}

/// Current simulated time, seconds.
inline double now_s() { return sg4::Engine::get_clock(); }

/// Waits for the first of `comms` to finish; returns its index. (4.x: ActivitySet::wait_any.)
inline std::size_t wait_any(const std::vector<sg4::CommPtr>& comms) {
    return static_cast<std::size_t>(sg4::Comm::wait_any(comms));
}

/// Asynchronous host-to-host transfer of `bytes` (no mailbox, no receiver actor).
inline sg4::CommPtr transfer_async(sg4::Host* from, sg4::Host* to, double bytes) {
    return sg4::Comm::sendto_async(from, to, static_cast<std::uint64_t>(bytes));
}

/// Fire-and-forget transfers (write-backs off the critical path). SimGrid 3.32 cannot detach a started
/// host-to-host comm, so they are kept here and dropped once finished.
class BackgroundTransfers {
public:
    void start(sg4::Host* from, sg4::Host* to, double bytes) {
        if (comms_.size() >= reap_at_) {
            std::erase_if(comms_, [](const sg4::CommPtr& c) { return c->test(); });
            reap_at_ = std::max<std::size_t>(64, 2 * comms_.size());
        }
        comms_.push_back(transfer_async(from, to, bytes));
    }

private:
    std::vector<sg4::CommPtr> comms_;
    std::size_t reap_at_ = 64;
};

/// Records the first exception raised by an actor body so that the driver can rethrow it after run().
class ActorErrors {
public:
    void record(std::exception_ptr e) {
        if (!first_) first_ = e;
    }
    bool has_error() const { return static_cast<bool>(first_); }
    void rethrow_if_any() const {
        if (first_) std::rethrow_exception(first_);
    }

private:
    std::exception_ptr first_;
};

/// Wraps an actor body: an exception is recorded and `stop` is called so that every actor winds down
/// cooperatively (the simulation ends); the driver rethrows the exception after Engine::run().
/// NOTE: Actor::kill_all is not used: killed actors unwind through simcalls (mutex unlocks) and
/// SimGrid 3.32 crashes on that path.
inline std::function<void()> guarded(ActorErrors& errors, std::function<void()> body,
                                     std::function<void()> stop) {
    return [&errors, body = std::move(body), stop = std::move(stop)]() {
        bool failed = false;
        try {
            body();
        } catch (const simgrid::ForcefulKillException&) {
            throw;  // SimGrid's own unwinding of killed actors
        } catch (...) {
            errors.record(std::current_exception());
            failed = true;
        }
        // NOTE: outside the catch block: stopping switches contexts, and the C++ runtime's
        // caught-exception stack is per thread (shared by every actor).
        if (failed) stop();
    };
}

}  // namespace deepinfer::sim::sg
