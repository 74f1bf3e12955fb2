// SPDX-License-Identifier: MIT
#include "remote/sshtransport.h"

#include <QDir>
#include <QFile>
#include <QRandomGenerator>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/sftp.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstring>

namespace rankscope::remote {

namespace {

QString keyFingerprint(ssh_key key) {
    unsigned char* hash = nullptr;
    size_t length = 0;
    if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) != SSH_OK)
        return QStringLiteral("(unknown)");
    char* text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length);
    const QString fingerprint = QString::fromLatin1(text);
    ssh_string_free_char(text);
    ssh_clean_pubkey_hash(&hash);
    return fingerprint;
}

// Copies a secret into libssh's buffer and wipes the QString's copy: nothing is kept or logged.
int provideSecret(const std::function<std::optional<QString>(const QString&)>& ask, const char* prompt, char* buf,
                  size_t len) {
    if (!ask)
        return -1;
    std::optional<QString> secret = ask(QString::fromUtf8(prompt));
    if (!secret)
        return -1;
    QByteArray bytes = secret->toUtf8();
    secret->fill(QLatin1Char('\0'));
    const bool fits = static_cast<size_t>(bytes.size()) < len;
    if (fits) {
        std::memcpy(buf, bytes.constData(), static_cast<size_t>(bytes.size()));
        buf[bytes.size()] = '\0';
    }
    bytes.fill('\0');
    return fits ? 0 : -1;
}

int passphraseCallback(const char* prompt, char* buf, size_t len, int /*echo*/, int /*verify*/, void* userdata) {
    const auto* options = static_cast<const SshOptions*>(userdata);
    return provideSecret(options->passphrase, prompt, buf, len);
}

// The fingerprints known_hosts holds for host:port, read from the file itself: libssh reports that a key
// changed but not which key it expected. Hashed entries cannot be matched by name and are left out.
QStringList knownFingerprints(const QString& knownHostsPath, const QString& host, int port) {
    QString path = knownHostsPath.isEmpty() ? QDir::homePath() + QStringLiteral("/.ssh/known_hosts") : knownHostsPath;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    const QString name = port > 0 && port != 22 ? QStringLiteral("[%1]:%2").arg(host).arg(port) : host;
    QStringList fingerprints;
    while (!file.atEnd()) {
        const QList<QByteArray> fields = file.readLine().simplified().split(' ');
        if (fields.size() < 3 || fields[0].startsWith('#'))
            continue;
        if (!QString::fromUtf8(fields[0]).split(QLatin1Char(',')).contains(name))
            continue;
        ssh_key key = nullptr;
        if (ssh_pki_import_pubkey_base64(fields[2].constData(), ssh_key_type_from_name(fields[1].constData()), &key) ==
            SSH_OK) {
            fingerprints << keyFingerprint(key);
            ssh_key_free(key);
        }
    }
    return fingerprints;
}

QByteArray newMarker() {
    return "@@rankscope-" + QByteArray::number(QRandomGenerator::system()->generate64(), 16) + "@@";
}

} // namespace

struct SshTransport::Impl {
    ssh_session session = nullptr;
    sftp_session sftp = nullptr;
    ssh_callbacks_struct callbacks{};
    QHash<QString, sftp_file> readers; // open files being followed, by path
    QByteArray marker = newMarker();

    void closeAll() {
        for (sftp_file file : std::as_const(readers))
            sftp_close(file);
        readers.clear();
        if (sftp)
            sftp_free(sftp);
        sftp = nullptr;
        if (session) {
            ssh_disconnect(session);
            ssh_free(session);
        }
        session = nullptr;
    }
};

SshTransport::SshTransport(SshOptions options) : m_options(std::move(options)), m_impl(std::make_unique<Impl>()) {}

SshTransport::~SshTransport() {
    m_impl->closeAll();
}

void SshTransport::fail(TransportErrorKind kind, const QString& what) const {
    throw TransportError(kind, m_options.host, what);
}

void SshTransport::failFromSession(const QString& what) const {
    const QString detail = m_impl->session ? QString::fromUtf8(ssh_get_error(m_impl->session)) : QString();
    const bool dead = !m_impl->session || !ssh_is_connected(m_impl->session) ||
                      detail.contains(QLatin1String("Socket"), Qt::CaseInsensitive) ||
                      detail.contains(QLatin1String("timeout"), Qt::CaseInsensitive);
    fail(dead ? TransportErrorKind::LinkLost : TransportErrorKind::Protocol,
         detail.isEmpty() ? what : what + QStringLiteral(": ") + detail);
}

QString SshTransport::resolveHostName(const SshOptions& options) {
    ssh_session session = ssh_new();
    if (!session)
        return options.host;
    ssh_options_set(session, SSH_OPTIONS_HOST, options.host.toUtf8().constData());
    if (options.sshConfigPath != QLatin1String("none")) {
        const QByteArray config = options.sshConfigPath.toUtf8();
        ssh_options_parse_config(session, config.isEmpty() ? nullptr : config.constData());
    }
    char* value = nullptr;
    QString resolved = options.host;
    if (ssh_options_get(session, SSH_OPTIONS_HOST, &value) == SSH_OK && value) {
        resolved = QString::fromUtf8(value);
        ssh_string_free_char(value);
    }
    ssh_free(session);
    return resolved;
}

ssh_session_struct* SshTransport::session() const {
    return m_impl->session;
}

bool SshTransport::isConnected() const {
    return m_impl->session && ssh_is_connected(m_impl->session);
}

void SshTransport::disconnect() {
    m_impl->closeAll();
}

void SshTransport::connect() {
    m_impl->closeAll();
    ssh_session session = ssh_new();
    if (!session)
        fail(TransportErrorKind::Protocol, QStringLiteral("cannot create an SSH session"));
    m_impl->session = session;
    const QByteArray host = m_options.host.toUtf8();
    ssh_options_set(session, SSH_OPTIONS_HOST, host.constData());
    // The config is read first so that what the job file says wins over it.
    int processConfig = 0;
    ssh_options_set(session, SSH_OPTIONS_PROCESS_CONFIG, &processConfig);
    if (m_options.sshConfigPath != QLatin1String("none")) {
        const QByteArray config = m_options.sshConfigPath.toUtf8();
        ssh_options_parse_config(session, config.isEmpty() ? nullptr : config.constData());
    }
    if (m_options.port > 0) {
        const unsigned int port = static_cast<unsigned int>(m_options.port);
        ssh_options_set(session, SSH_OPTIONS_PORT, &port);
    }
    if (!m_options.user.isEmpty())
        ssh_options_set(session, SSH_OPTIONS_USER, m_options.user.toUtf8().constData());
    if (!m_options.knownHostsPath.isEmpty())
        ssh_options_set(session, SSH_OPTIONS_KNOWNHOSTS, m_options.knownHostsPath.toUtf8().constData());
    const long timeout = static_cast<long>(m_options.connectTimeout.count());
    ssh_options_set(session, SSH_OPTIONS_TIMEOUT, &timeout);

    if (ssh_connect(session) != SSH_OK) {
        const QString detail = QString::fromUtf8(ssh_get_error(session));
        TransportErrorKind kind = TransportErrorKind::Protocol;
        if (detail.contains(QLatin1String("resolve"), Qt::CaseInsensitive))
            kind = TransportErrorKind::Dns;
        else if (detail.contains(QLatin1String("refused"), Qt::CaseInsensitive))
            kind = TransportErrorKind::Refused;
        else if (detail.contains(QLatin1String("timeout"), Qt::CaseInsensitive) ||
                 detail.contains(QLatin1String("timed out"), Qt::CaseInsensitive) ||
                 detail.contains(QLatin1String("unreachable"), Qt::CaseInsensitive) ||
                 detail.contains(QLatin1String("No route"), Qt::CaseInsensitive))
            kind = TransportErrorKind::Unreachable;
        unsigned int port = 0;
        ssh_options_get_port(session, &port); // the port tried: the job's, else ssh_config's, else 22
        m_impl->closeAll();
        fail(kind, port > 0 ? QStringLiteral("cannot connect to port %1: %2").arg(port).arg(detail)
                            : QStringLiteral("cannot connect: %1").arg(detail));
    }
    try {
        verifyHostKey();
        authenticate();
        tuneSocket();
    } catch (...) {
        m_impl->closeAll();
        throw;
    }
}

void SshTransport::verifyHostKey() {
    ssh_session session = m_impl->session;
    ssh_key serverKey = nullptr;
    if (ssh_get_server_publickey(session, &serverKey) != SSH_OK)
        failFromSession(QStringLiteral("no host key from the server"));
    m_serverFingerprint = keyFingerprint(serverKey);
    ssh_key_free(serverKey);

    switch (ssh_session_is_known_server(session)) {
    case SSH_KNOWN_HOSTS_OK:
        return;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER: {
        unsigned int port = 22;
        ssh_options_get_port(session, &port);
        const QStringList knownKeys =
            knownFingerprints(m_options.knownHostsPath, m_options.host, static_cast<int>(port));
        const QString known =
            knownKeys.isEmpty() ? QStringLiteral("another key") : knownKeys.join(QStringLiteral(", "));
        fail(TransportErrorKind::HostKeyChanged,
             QStringLiteral("host key CHANGED: known_hosts has %1, the server offers %2. Refused: this may be an "
                            "attack, or the node was reinstalled; remove the old entry with ssh-keygen -R "
                            "only if you know why it changed")
                 .arg(known, m_serverFingerprint));
    }
    case SSH_KNOWN_HOSTS_NOT_FOUND:
    case SSH_KNOWN_HOSTS_UNKNOWN: {
        const bool accepted =
            m_options.acceptUnknownHost ||
            (m_options.confirmUnknownHost && m_options.confirmUnknownHost(m_options.host, m_serverFingerprint));
        if (!accepted)
            fail(TransportErrorKind::HostKeyUnknown,
                 QStringLiteral("unknown host key %1: not in known_hosts. Check the fingerprint and accept it "
                                "explicitly (--accept-new-host-keys) to trust it")
                     .arg(m_serverFingerprint));
        if (ssh_session_update_known_hosts(session) != SSH_OK)
            failFromSession(QStringLiteral("cannot add the host key to known_hosts"));
        return;
    }
    case SSH_KNOWN_HOSTS_ERROR:
        break;
    }
    failFromSession(QStringLiteral("cannot check the host key against known_hosts"));
}

void SshTransport::authenticate() {
    ssh_session session = m_impl->session;
    // The user logged in as (the job's, else ssh_config's, else this machine's): a refusal names it.
    QString user;
    if (char* name = nullptr; ssh_options_get(session, SSH_OPTIONS_USER, &name) == SSH_OK && name) {
        user = QString::fromUtf8(name);
        ssh_string_free_char(name);
    }
    const QString account = user.isEmpty() ? m_options.host : user + QLatin1Char('@') + m_options.host;
    int result = ssh_userauth_none(session, nullptr);
    if (result == SSH_AUTH_SUCCESS)
        return;
    if (result == SSH_AUTH_ERROR)
        failFromSession(QStringLiteral("authentication failed"));
    const int methods = ssh_userauth_list(session, nullptr);
    QStringList tried;

    if (methods & SSH_AUTH_METHOD_PUBLICKEY) {
        if (!m_options.identityFile.isEmpty()) {
            QString path = m_options.identityFile;
            if (path.startsWith(QLatin1String("~/")))
                path = QDir::homePath() + path.mid(1);
            ssh_key key = nullptr;
            if (ssh_pki_import_privkey_file(path.toUtf8().constData(), nullptr, passphraseCallback, &m_options, &key) !=
                SSH_OK)
                fail(
                    TransportErrorKind::Auth,
                    QStringLiteral("cannot load identity file %1 (missing, unreadable or wrong passphrase)").arg(path));
            result = ssh_userauth_publickey(session, nullptr, key);
            ssh_key_free(key);
            if (result == SSH_AUTH_SUCCESS)
                return;
            tried << QStringLiteral("key %1").arg(path);
        } else {
            if (qEnvironmentVariableIsSet("SSH_AUTH_SOCK")) {
                if (ssh_userauth_agent(session, nullptr) == SSH_AUTH_SUCCESS)
                    return;
                tried << QStringLiteral("ssh-agent");
            }
            m_impl->callbacks = {};
            m_impl->callbacks.userdata = &m_options;
            m_impl->callbacks.auth_function = passphraseCallback;
            ssh_callbacks_init(&m_impl->callbacks);
            ssh_set_callbacks(session, &m_impl->callbacks);
            if (ssh_userauth_publickey_auto(session, nullptr, nullptr) == SSH_AUTH_SUCCESS)
                return;
            tried << QStringLiteral("default keys");
        }
    }
    if ((methods & SSH_AUTH_METHOD_PASSWORD) && m_options.password) {
        std::optional<QString> secret = m_options.password(QStringLiteral("Password for %1: ").arg(account));
        if (secret) {
            QByteArray bytes = secret->toUtf8();
            secret->fill(QLatin1Char('\0'));
            result = ssh_userauth_password(session, nullptr, bytes.constData());
            bytes.fill('\0');
            if (result == SSH_AUTH_SUCCESS)
                return;
        }
        tried << QStringLiteral("password");
    }
    fail(TransportErrorKind::Auth, QStringLiteral("authentication refused%1 (tried: %2)")
                                       .arg(user.isEmpty() ? QString() : QStringLiteral(" for user %1").arg(user),
                                            tried.isEmpty() ? QStringLiteral("no usable method") : tried.join(", ")));
}

void SshTransport::tuneSocket() {
    const int fd = ssh_get_fd(m_impl->session);
    if (fd < 0)
        return;
    const int seconds = static_cast<int>(std::max<long long>(2, m_options.deadLinkAfter.count()));
    const int on = 1;
    const int idle = std::max(1, seconds / 4);
    const int interval = std::max(1, seconds / 4);
    const int count = 3;
    const unsigned int userTimeoutMs = static_cast<unsigned int>(seconds) * 1000U;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeoutMs, sizeof userTimeoutMs);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    // Blocking reads (SFTP answers) give up after the same time instead of waiting forever.
    const long timeout = seconds;
    ssh_options_set(m_impl->session, SSH_OPTIONS_TIMEOUT, &timeout);
}

ExecResult SshTransport::exec(const QString& command, const QByteArray& input, std::chrono::milliseconds timeout,
                              CommandEffect effect) {
    if (!isConnected())
        fail(TransportErrorKind::LinkLost, QStringLiteral("not connected"));
    ssh_channel channel = ssh_channel_new(m_impl->session);
    if (!channel)
        failFromSession(QStringLiteral("cannot open a channel"));
    const auto cleanup = qScopeGuard([channel] {
        ssh_channel_close(channel);
        ssh_channel_free(channel);
    });
    const QByteArray wrapped = wrapForNoisyShell(command, m_impl->marker).toUtf8();
    if (ssh_channel_open_session(channel) != SSH_OK || ssh_channel_request_exec(channel, wrapped.constData()) != SSH_OK)
        failFromSession(QStringLiteral("cannot start a command"));
    for (qsizetype sent = 0; sent < input.size();) {
        const int n = ssh_channel_write(channel, input.constData() + sent,
                                        static_cast<uint32_t>(std::min<qsizetype>(input.size() - sent, 32768)));
        if (n < 0)
            failFromSession(QStringLiteral("cannot send the command's input"));
        sent += n;
    }
    ssh_channel_send_eof(channel);

    ExecResult result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char buffer[16384];
    while (true) {
        const int out = ssh_channel_read_timeout(channel, buffer, sizeof buffer, 0, 50);
        if (out > 0)
            result.out.append(buffer, out);
        const int err = ssh_channel_read_timeout(channel, buffer, sizeof buffer, 1, out > 0 ? 0 : 10);
        if (err > 0)
            result.err.append(buffer, err);
        if (out == SSH_ERROR || err == SSH_ERROR)
            failFromSession(QStringLiteral("command output interrupted"));
        if (out <= 0 && err <= 0 && ssh_channel_is_eof(channel))
            break;
        if (std::chrono::steady_clock::now() > deadline)
            fail(TransportErrorKind::Timeout,
                 QStringLiteral("command did not finish within %1 s").arg(timeout.count() / 1000.0));
        // The channel closes behind it; the command itself ends by its own time limit (a capture's `timeout`),
        // or on writing to the closed channel.
        if (leaving(effect))
            fail(TransportErrorKind::Abandoned, abandonedMessage());
    }
    result.exitStatus = ssh_channel_get_exit_status(channel);
    result.out = stripBeforeMarker(result.out, m_impl->marker);
    result.err = stripBeforeMarker(result.err, m_impl->marker);
    return result;
}

void* SshTransport::sftp() {
    if (!isConnected())
        fail(TransportErrorKind::LinkLost, QStringLiteral("not connected"));
    if (!m_impl->sftp) {
        sftp_session sftp = sftp_new(m_impl->session);
        if (!sftp || sftp_init(sftp) != SSH_OK) {
            if (sftp)
                sftp_free(sftp);
            failFromSession(QStringLiteral("cannot start SFTP (is the sftp subsystem enabled in sshd_config?)"));
        }
        m_impl->sftp = sftp;
    }
    return m_impl->sftp;
}

void SshTransport::writeChunks(const QString& path, int mode, const std::function<qint64(char*, qint64)>& source) {
    auto* session = static_cast<sftp_session>(sftp());
    const QString temporary =
        path + QStringLiteral(".rankscope-tmp-%1").arg(QRandomGenerator::global()->generate(), 0, 16);
    const QByteArray tmp = temporary.toUtf8();
    sftp_file file = sftp_open(session, tmp.constData(), O_WRONLY | O_CREAT | O_TRUNC, static_cast<mode_t>(mode));
    if (!file)
        failFromSession(QStringLiteral("cannot create %1").arg(temporary));
    QByteArray chunk(kSftpChunkBytes, Qt::Uninitialized);
    while (true) {
        const qint64 n = source(chunk.data(), kSftpChunkBytes);
        if (n < 0) {
            sftp_close(file);
            sftp_unlink(session, tmp.constData());
            fail(TransportErrorKind::Io, QStringLiteral("cannot read the local data for %1").arg(path));
        }
        if (n == 0)
            break;
        if (sftp_write(file, chunk.constData(), static_cast<size_t>(n)) != n) {
            sftp_close(file);
            failFromSession(QStringLiteral("cannot write %1").arg(temporary));
        }
    }
    if (sftp_close(file) != SSH_OK)
        failFromSession(QStringLiteral("cannot finish writing %1").arg(temporary));
    sftp_chmod(session, tmp.constData(), static_cast<mode_t>(mode));
    // OpenSSH's plain rename refuses to replace; libssh uses posix-rename@openssh.com when offered.
    if (sftp_rename(session, tmp.constData(), path.toUtf8().constData()) != SSH_OK) {
        sftp_unlink(session, path.toUtf8().constData());
        if (sftp_rename(session, tmp.constData(), path.toUtf8().constData()) != SSH_OK)
            failFromSession(QStringLiteral("cannot move %1 into place").arg(path));
    }
}

void SshTransport::writeFile(const QString& path, const QByteArray& data, int mode) {
    qint64 position = 0;
    writeChunks(path, mode, [&](char* buffer, qint64 capacity) {
        const qint64 n = std::min<qint64>(capacity, data.size() - position);
        std::memcpy(buffer, data.constData() + position, static_cast<size_t>(n));
        position += n;
        return n;
    });
}

void SshTransport::uploadFile(const QString& localPath, const QString& remotePath, int mode) {
    QFile local(localPath);
    if (!local.open(QIODevice::ReadOnly))
        fail(TransportErrorKind::Io, QStringLiteral("cannot read %1: %2").arg(localPath, local.errorString()));
    writeChunks(remotePath, mode, [&](char* buffer, qint64 capacity) { return local.read(buffer, capacity); });
}

QByteArray SshTransport::readFrom(const QString& path, qint64 offset, qint64 maxBytes) {
    auto* session = static_cast<sftp_session>(sftp());
    sftp_file file = m_impl->readers.value(path);
    if (!file) {
        file = sftp_open(session, path.toUtf8().constData(), O_RDONLY, 0);
        if (!file) {
            if (sftp_get_error(session) == SSH_FX_NO_SUCH_FILE)
                return {};
            failFromSession(QStringLiteral("cannot open %1").arg(path));
        }
        m_impl->readers.insert(path, file);
    }
    // Seeking also clears libssh's end-of-file flag, so a file that grew since is read again.
    if (sftp_seek64(file, static_cast<uint64_t>(offset)) != 0)
        failFromSession(QStringLiteral("cannot seek in %1").arg(path));
    QByteArray data;
    char buffer[65536];
    while (data.size() < maxBytes) {
        const ssize_t n =
            sftp_read(file, buffer, static_cast<size_t>(std::min<qint64>(sizeof buffer, maxBytes - data.size())));
        if (n < 0)
            failFromSession(QStringLiteral("cannot read %1").arg(path));
        if (n == 0)
            break;
        data.append(buffer, n);
    }
    return data;
}

std::optional<QByteArray> SshTransport::readWhole(const QString& path) {
    if (!fileSize(path))
        return std::nullopt;
    QByteArray whole;
    while (true) {
        const QByteArray part = readFrom(path, whole.size(), 1 << 20);
        if (part.isEmpty())
            break;
        whole += part;
    }
    if (sftp_file file = m_impl->readers.take(path))
        sftp_close(file);
    return whole;
}

std::optional<qint64> SshTransport::fileSize(const QString& path) {
    auto* session = static_cast<sftp_session>(sftp());
    sftp_attributes attributes = sftp_stat(session, path.toUtf8().constData());
    if (!attributes) {
        if (sftp_get_error(session) == SSH_FX_NO_SUCH_FILE)
            return std::nullopt;
        failFromSession(QStringLiteral("cannot stat %1").arg(path));
    }
    const auto size = static_cast<qint64>(attributes->size);
    sftp_attributes_free(attributes);
    return size;
}

void SshTransport::makeDirectories(const QString& path) {
    auto* session = static_cast<sftp_session>(sftp());
    const QStringList parts = path.split(QLatin1Char('/'));
    QString current = path.startsWith(QLatin1Char('/')) ? QStringLiteral("/") : QString();
    for (const QString& part : parts) {
        if (part.isEmpty())
            continue;
        current += part;
        const QByteArray bytes = current.toUtf8();
        if (sftp_mkdir(session, bytes.constData(), 0755) != SSH_OK) {
            sftp_attributes attributes = sftp_stat(session, bytes.constData());
            const bool isDirectory = attributes && attributes->type == SSH_FILEXFER_TYPE_DIRECTORY;
            if (attributes)
                sftp_attributes_free(attributes);
            if (!isDirectory)
                fail(TransportErrorKind::Io, QStringLiteral("cannot create directory %1").arg(current));
        }
        current += QLatin1Char('/');
    }
}

QString SshTransport::homeDirectory() {
    auto* session = static_cast<sftp_session>(sftp());
    char* path = sftp_canonicalize_path(session, ".");
    if (!path)
        failFromSession(QStringLiteral("cannot resolve the home directory"));
    const QString home = QString::fromUtf8(path);
    ssh_string_free_char(path);
    return home;
}

} // namespace rankscope::remote
