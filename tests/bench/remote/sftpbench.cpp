// SPDX-License-Identifier: MIT
// sftp: SshTransport::uploadFile of one large file to a loopback sshd, against OpenSSH's scp of the same
// file to the same server, per cipher setting: each side's default, then ciphers pinned through one ssh
// config file that both read (libssh through SshOptions::sshConfigPath, scp through -F).
#include "benchcommon.h"

#include "fixtures/sshdfixture.h"
#include "remote/sshtransport.h"

#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <libssh/libssh.h>

namespace rankscope::bench {

namespace {

struct CipherSetting {
    QString name;   // "default" or the pinned cipher
    QString config; // ssh config file both clients read
    QString libsshNegotiated;
    QString opensshNegotiated;
    QVector<double> uploadMiBs, connectUploadMiBs, connectMs, scpMiBs;
};

bool writeRandomFile(const QString& path, qint64 bytes) {
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return false;
    QByteArray block(1 << 20, Qt::Uninitialized);
    for (qint64 written = 0; written < bytes; written += block.size()) {
        // Incompressible and different per block, so that nothing along the way can shortcut it.
        QRandomGenerator::global()->fillRange(reinterpret_cast<quint32*>(block.data()), block.size() / 4);
        if (file.write(block.constData(), std::min<qint64>(block.size(), bytes - written)) < 0)
            return false;
    }
    return true;
}

// What libssh negotiates with this server and config: the same options SshTransport::connect sets.
QString libsshCipher(const test::SshdFixture& sshd, const QString& config) {
    ssh_session session = ssh_new();
    const QByteArray host = sshd.host().toUtf8();
    const QByteArray path = config.toUtf8();
    const QByteArray knownHosts = sshd.knownHostsPath().toUtf8();
    const unsigned int port = static_cast<unsigned int>(sshd.port());
    int processConfig = 0;
    ssh_options_set(session, SSH_OPTIONS_HOST, host.constData());
    ssh_options_set(session, SSH_OPTIONS_PROCESS_CONFIG, &processConfig);
    ssh_options_parse_config(session, path.constData());
    ssh_options_set(session, SSH_OPTIONS_PORT, &port);
    ssh_options_set(session, SSH_OPTIONS_KNOWNHOSTS, knownHosts.constData());
    QString cipher;
    if (ssh_connect(session) == SSH_OK)
        cipher = QStringLiteral("%1 (MAC %2)")
                     .arg(QString::fromUtf8(ssh_get_cipher_out(session)), QString::fromUtf8(ssh_get_hmac_out(session)));
    else
        cipher = QStringLiteral("error: %1").arg(QString::fromUtf8(ssh_get_error(session)));
    ssh_disconnect(session);
    ssh_free(session);
    return cipher;
}

QString opensshCipher(const OpensshTarget& target) {
    QProcess ssh;
    // The first value of an option wins: the debug level goes before opensshOptions' LogLevel=ERROR.
    ssh.start(QStringLiteral("ssh"), QStringList{QStringLiteral("-o"), QStringLiteral("LogLevel=DEBUG1")} +
                                         sshArguments(target, QStringLiteral("true")));
    ssh.waitForFinished(30000);
    const QRegularExpression line(QStringLiteral("kex: client->server cipher: (\\S+) MAC: (\\S+)"));
    const QRegularExpressionMatch match = line.match(QString::fromUtf8(ssh.readAllStandardError()));
    return match.hasMatch() ? QStringLiteral("%1 (MAC %2)").arg(match.captured(1), match.captured(2))
                            : QStringLiteral("unknown");
}

double mib(qint64 bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

bool uploadWithTransport(const test::SshdFixture& sshd, CipherSetting& setting, const QString& source,
                         const QString& target, QString* error) {
    remote::SshOptions options;
    options.host = sshd.host();
    options.port = sshd.port();
    options.user = sshd.userName();
    options.identityFile = sshd.userKeyPath();
    options.knownHostsPath = sshd.knownHostsPath();
    options.sshConfigPath = setting.config;
    remote::SshTransport transport(options);
    const qint64 bytes = QFileInfo(source).size();
    try {
        QElapsedTimer clock;
        clock.start();
        transport.connect();
        const double connected = static_cast<double>(clock.nsecsElapsed()) / 1e6;
        transport.uploadFile(source, target);
        const double total = static_cast<double>(clock.nsecsElapsed()) / 1e6;
        setting.connectMs << connected;
        setting.uploadMiBs << mib(bytes) / ((total - connected) / 1000);
        setting.connectUploadMiBs << mib(bytes) / (total / 1000);
    } catch (const remote::TransportError& e) {
        *error = QString::fromUtf8(e.what());
        return false;
    }
    return QFileInfo(target).size() == bytes;
}

bool uploadWithScp(const OpensshTarget& ssh, CipherSetting& setting, const QString& source, const QString& target,
                   QString* error) {
    QProcess scp;
    QElapsedTimer clock;
    clock.start();
    scp.start(QStringLiteral("scp"),
              opensshOptions(ssh) + QStringList{QStringLiteral("-q"), QStringLiteral("-P"), QString::number(ssh.port),
                                                source, QStringLiteral("%1@%2:%3").arg(ssh.user, ssh.host, target)});
    if (!scp.waitForFinished(600000) || scp.exitCode() != 0) {
        *error = QStringLiteral("scp failed: %1").arg(QString::fromUtf8(scp.readAllStandardError()));
        return false;
    }
    const double total = static_cast<double>(clock.nsecsElapsed()) / 1e6;
    setting.scpMiBs << mib(QFileInfo(source).size()) / (total / 1000);
    return QFileInfo(target).size() == QFileInfo(source).size();
}

} // namespace

QJsonObject runSftpBench(const BenchArgs& args, QString* error) {
    test::SshdFixture sshd;
    QTemporaryDir dir;
    if (!dir.isValid() || !sshd.start(error))
        return {};
    const qint64 bytes = qint64(args.integer(QStringLiteral("size-mib"), 256)) << 20;
    const QString source = dir.filePath(QStringLiteral("source.bin"));
    if (!writeRandomFile(source, bytes)) {
        *error = QStringLiteral("cannot write %1").arg(source);
        return {};
    }
    OpensshTarget ssh;
    ssh.host = sshd.host();
    ssh.port = sshd.port();
    ssh.user = sshd.userName();
    ssh.identityFile = sshd.userKeyPath();
    ssh.knownHosts = sshd.knownHostsPath();
    std::vector<CipherSetting> settings;
    const QStringList ciphers = args.text(QStringLiteral("ciphers"), QStringLiteral("default,aes128-gcm@openssh.com"))
                                    .split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (const QString& cipher : ciphers) {
        CipherSetting setting{
            cipher, dir.filePath(QStringLiteral("ssh_config_%1").arg(settings.size())), {}, {}, {}, {}, {}, {}};
        QFile config(setting.config);
        if (!config.open(QIODevice::WriteOnly))
            return {};
        if (cipher != QLatin1String("default"))
            config.write(QStringLiteral("Host *\n    Ciphers %1\n").arg(cipher).toUtf8());
        config.close();
        setting.libsshNegotiated = libsshCipher(sshd, setting.config);
        ssh.config = setting.config;
        setting.opensshNegotiated = opensshCipher(ssh);
        settings.push_back(setting);
    }
    const QString target = dir.filePath(QStringLiteral("uploaded.bin"));
    for (int round = 0; round < args.rounds(); ++round) {
        for (CipherSetting& setting : settings) {
            ssh.config = setting.config;
            for (int side = 0; side < 2; ++side) {
                const bool ok = (side + round) % 2 == 0 ? uploadWithTransport(sshd, setting, source, target, error)
                                                        : uploadWithScp(ssh, setting, source, target, error);
                QFile::remove(target);
                if (!ok) {
                    if (error->isEmpty())
                        *error = QStringLiteral("the uploaded file has the wrong size");
                    return {};
                }
            }
            qInfo("sftp round %d, %s: uploadFile %.0f MiB/s (with connect %.0f), scp %.0f MiB/s", round + 1,
                  qPrintable(setting.name), setting.uploadMiBs.last(), setting.connectUploadMiBs.last(),
                  setting.scpMiBs.last());
        }
    }
    QJsonArray results;
    for (const CipherSetting& setting : settings)
        results.append(QJsonObject{
            {"cipher_setting", setting.name},
            {"libssh_negotiated", setting.libsshNegotiated},
            {"openssh_negotiated", setting.opensshNegotiated},
            {"upload_mib_s", summary(setting.uploadMiBs)},
            {"connect_upload_mib_s", summary(setting.connectUploadMiBs)},
            {"connect_ms", summary(setting.connectMs)},
            {"scp_mib_s", summary(setting.scpMiBs)},
            {"ratio_connect_upload_over_scp",
             std::round(median(setting.connectUploadMiBs) / median(setting.scpMiBs) * 100) / 100},
        });
    return QJsonObject{{"bench", "sftp"},
                       {"size_mib", static_cast<double>(bytes >> 20)},
                       {"rounds", args.rounds()},
                       {"chunk_bytes", remote::SshTransport::kSftpChunkBytes},
                       {"libssh_version", QString::fromLatin1(ssh_version(0))},
                       {"settings", results}};
}

} // namespace rankscope::bench
