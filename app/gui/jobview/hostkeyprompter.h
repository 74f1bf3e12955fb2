// SPDX-License-Identifier: MIT
#pragma once

#include "remote/runengine.h"
#include "remote/transportfactory.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QWidget>

#include <functional>
#include <memory>
#include <optional>

namespace rankscope::gui {

// The engine asks its questions (trust this host key? the passphrase of this key?) from its node threads,
// which may not touch a widget. The prompter's callbacks carry each question to the GUI thread, ask it there
// in a dialog and hand the answer back to the waiting thread. The GUI thread never waits for a node thread
// here, so nothing deadlocks; cancel() answers every waiting question with "no" (a refusal, no secret), which
// the owner of a check does before it waits for the check's threads. Secrets are never logged.
class HostKeyPrompter final : public QObject {
    Q_OBJECT

public:
    enum class Kind { HostKey, Passphrase, Password };
    struct Question {
        Kind kind = Kind::HostKey;
        QString host;        // HostKey: the host as the job names it
        QString fingerprint; // HostKey: "SHA256:..."
        QString prompt;      // Passphrase, Password: what libssh asks
    };
    // Answers on the GUI thread instead of a dialog (tests, scripted use): for HostKey any value trusts and
    // nullopt refuses; for a secret the value is the secret and nullopt cancels.
    using AnswerHook = std::function<std::optional<QString>(const Question& question)>;

    // dialogParent: the window the dialogs are modal to (may be null).
    explicit HostKeyPrompter(QWidget* dialogParent = nullptr, QObject* parent = nullptr);
    ~HostKeyPrompter() override; // cancels

    void setAnswerHook(AnswerHook hook) { m_hook = std::move(hook); }
    // Answers every question now waiting with a refusal, and every later one as well when permanently.
    void cancel(bool permanently = false);

    // Callbacks for ConnectionOptions and EngineOptions, safe to call from any thread; they hold no pointer
    // to this object that could dangle.
    [[nodiscard]] std::function<bool(const QString& host, const QString& fingerprint)> hostKeyCallback() const;
    [[nodiscard]] std::function<std::optional<QString>(const QString& prompt)> passphraseCallback() const;
    [[nodiscard]] std::function<std::optional<QString>(const QString& prompt)> passwordCallback() const;
    void install(remote::ConnectionOptions& options) const;
    void install(remote::EngineOptions& options) const;

    // The dialogs' object names, for tests that answer them by hand.
    static inline const QString kHostKeyDialogName = QStringLiteral("hostKeyPrompt");
    static inline const QString kSecretDialogName = QStringLiteral("secretPrompt");
    static inline const QString kTrustButtonName = QStringLiteral("trustHostKey");
    static inline const QString kRefuseButtonName = QStringLiteral("refuseHostKey");

private:
    struct Shared;
    std::optional<QString> answer(const Question& question); // GUI thread
    std::optional<QString> askHostKey(const Question& question);
    std::optional<QString> askSecret(const Question& question);
    static std::optional<QString> ask(const std::shared_ptr<Shared>& shared, const Question& question);

    QPointer<QWidget> m_dialogParent;
    AnswerHook m_hook;
    std::shared_ptr<Shared> m_shared;
};

} // namespace rankscope::gui
