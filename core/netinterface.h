// SPDX-License-Identifier: MIT
#pragma once

#include <QStringView>

#include <array>

namespace rankscope {

// A container's or a VM's network interface, by the names Docker, libvirt, veth pairs, Docker's user networks and
// Kubernetes' CNI plugins (cni, flannel, Calico) give them: other nodes usually cannot reach an address on one. The
// pre-flight check warns of a rendezvous on one, and the NCCL findings of sockets NCCL opened on one.
[[nodiscard]] inline bool isVirtualInterface(QStringView name) {
    static constexpr std::array<QStringView, 7> kPrefixes = {u"docker", u"virbr",   u"veth", u"br-",
                                                             u"cni",    u"flannel", u"cali"};
    for (const QStringView prefix : kPrefixes) {
        if (name.startsWith(prefix))
            return true;
    }
    return false;
}

} // namespace rankscope
