// SPDX-License-Identifier: MIT
#include "core/sshconfig.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

namespace rankscope {

namespace {

// Include may loop (a file that includes itself); OpenSSH stops at this depth as well.
constexpr int kMaxIncludeDepth = 16;

// A config line's arguments: whitespace separated, double quotes group ("My Host").
QStringList splitArguments(QStringView text) {
    QStringList arguments;
    QString current;
    bool quoted = false;
    bool any = false;
    for (const QChar c : text) {
        if (c == QLatin1Char('"')) {
            quoted = !quoted;
            any = true;
        } else if (!quoted && c.isSpace()) {
            if (any)
                arguments << current;
            current.clear();
            any = false;
        } else {
            current += c;
            any = true;
        }
    }
    if (any)
        arguments << current;
    return arguments;
}

QString expandHome(const QString& path) {
    if (path == QLatin1String("~"))
        return QDir::homePath();
    if (path.startsWith(QLatin1String("~/")))
        return QDir::homePath() + path.mid(1);
    return path;
}

// The files an Include argument names: a glob in its last component, relative to baseDir.
QStringList includedFiles(const QString& argument, const QString& baseDir) {
    QString pattern = expandHome(argument);
    if (QDir::isRelativePath(pattern))
        pattern = QDir(baseDir).filePath(pattern);
    const QFileInfo info(pattern);
    const QString name = info.fileName();
    if (!name.contains(QLatin1Char('*')) && !name.contains(QLatin1Char('?')) && !name.contains(QLatin1Char('[')))
        return {pattern};
    QStringList files;
    const QDir dir = info.dir();
    for (const QString& match : dir.entryList({name}, QDir::Files | QDir::Readable, QDir::Name))
        files << dir.filePath(match);
    return files;
}

bool isPattern(const QString& name) {
    return name.startsWith(QLatin1Char('!')) || name.contains(QLatin1Char('*')) || name.contains(QLatin1Char('?'));
}

void collectHosts(const QString& path, const QString& baseDir, int depth, QStringList& hosts) {
    if (depth > kMaxIncludeDepth)
        return;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return;
    static const QRegularExpression keywordEnd(QStringLiteral("[\\s=]"));
    while (!file.atEnd()) {
        const QString line = QString::fromUtf8(file.readLine()).trimmed();
        if (line.isEmpty() || line.startsWith(QLatin1Char('#')))
            continue;
        const qsizetype end = line.indexOf(keywordEnd);
        if (end <= 0)
            continue;
        const QString keyword = line.left(end).toLower();
        QStringView rest = QStringView(line).mid(end).trimmed();
        if (rest.startsWith(QLatin1Char('=')))
            rest = rest.mid(1).trimmed();
        // A comment may follow the arguments.
        if (const qsizetype hash = rest.indexOf(QLatin1String(" #")); hash >= 0)
            rest = rest.left(hash);
        const QStringList arguments = splitArguments(rest);
        if (keyword == QLatin1String("host")) {
            for (const QString& name : arguments)
                if (!isPattern(name) && !hosts.contains(name))
                    hosts << name;
        } else if (keyword == QLatin1String("include")) {
            for (const QString& argument : arguments)
                for (const QString& included : includedFiles(argument, baseDir))
                    collectHosts(included, baseDir, depth + 1, hosts);
        }
    }
}

} // namespace

QStringList sshConfigHosts(const QString& path) {
    QStringList hosts;
    // ssh resolves a relative Include against ~/.ssh for the user's config; that is the config's own folder.
    collectHosts(path, QFileInfo(path).absolutePath(), 0, hosts);
    return hosts;
}

} // namespace rankscope
