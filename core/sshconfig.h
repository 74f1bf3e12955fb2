// SPDX-License-Identifier: MIT
#pragma once

#include <QString>
#include <QStringList>

namespace rankscope {

// The host aliases an OpenSSH client config defines, in file order without duplicates: every name of every
// "Host" line (also "Host=a b"; keywords in any case), following "Include" (globs, ~ expanded; a relative path is
// relative to the folder of the config first read, in an included file too, as OpenSSH takes ~/.ssh). Patterns
// ('*', '?') and negations ('!') are left out: they name no one host.
// A missing or unreadable file gives an empty list.
[[nodiscard]] QStringList sshConfigHosts(const QString& path);

} // namespace rankscope
