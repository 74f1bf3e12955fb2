// SPDX-License-Identifier: MIT
#include "hostkeyprompter.h"

#include <QInputDialog>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QThread>

#include <condition_variable>
#include <list>
#include <mutex>

namespace rankscope::gui {

namespace {

// One question on its way to the GUI thread and its answer on the way back. The first answer wins: a cancel
// and the dialog may both try.
struct Pending {
    std::mutex mutex;
    std::condition_variable answered;
    bool done = false;
    std::optional<QString> answer;

    void set(std::optional<QString> value) {
        {
            const std::lock_guard<std::mutex> guard(mutex);
            if (done)
                return;
            done = true;
            answer = std::move(value);
        }
        answered.notify_all();
    }
    bool isDone() {
        const std::lock_guard<std::mutex> guard(mutex);
        return done;
    }
    std::optional<QString> wait() {
        std::unique_lock<std::mutex> lock(mutex);
        answered.wait(lock, [this] { return done; });
        return answer;
    }
};

} // namespace

// What the callbacks hold: they may outlive the prompter (a node thread still connecting), so they reach it
// through a QPointer under a lock, never through a raw pointer.
struct HostKeyPrompter::Shared {
    std::mutex mutex;
    QPointer<HostKeyPrompter> prompter;
    bool closed = false;
    std::list<std::shared_ptr<Pending>> pending;
};

HostKeyPrompter::HostKeyPrompter(QWidget* dialogParent, QObject* parent)
    : QObject(parent), m_dialogParent(dialogParent), m_shared(std::make_shared<Shared>()) {
    m_shared->prompter = this;
}

HostKeyPrompter::~HostKeyPrompter() {
    cancel(true);
}

void HostKeyPrompter::cancel(bool permanently) {
    std::list<std::shared_ptr<Pending>> waiting;
    {
        const std::lock_guard<std::mutex> guard(m_shared->mutex);
        if (permanently)
            m_shared->closed = true;
        waiting.swap(m_shared->pending);
    }
    for (const auto& pending : waiting)
        pending->set(std::nullopt);
}

std::optional<QString> HostKeyPrompter::ask(const std::shared_ptr<Shared>& shared, const Question& question) {
    auto pending = std::make_shared<Pending>();
    HostKeyPrompter* here = nullptr; // set when asked on the prompter's own thread
    {
        const std::lock_guard<std::mutex> guard(shared->mutex);
        HostKeyPrompter* prompter = shared->prompter.data();
        if (shared->closed || !prompter)
            return std::nullopt;
        shared->pending.push_back(pending);
        if (QThread::currentThread() == prompter->thread())
            here = prompter; // no hop needed, and waiting for one would never end
        else
            QMetaObject::invokeMethod(
                prompter,
                [prompter, pending, question] {
                    if (!pending->isDone()) // not cancelled while the call was on its way
                        pending->set(prompter->answer(question));
                },
                Qt::QueuedConnection);
    }
    if (here)
        pending->set(here->answer(question));
    std::optional<QString> result = pending->wait();
    const std::lock_guard<std::mutex> guard(shared->mutex);
    shared->pending.remove(pending);
    return result;
}

std::optional<QString> HostKeyPrompter::answer(const Question& question) {
    if (m_hook)
        return m_hook(question);
    return question.kind == Kind::HostKey ? askHostKey(question) : askSecret(question);
}

std::optional<QString> HostKeyPrompter::askHostKey(const Question& question) {
    QMessageBox box(m_dialogParent);
    box.setObjectName(kHostKeyDialogName);
    box.setIcon(QMessageBox::Question);
    box.setWindowTitle(tr("Unknown host key"));
    box.setText(tr("<b>%1</b> is not in your known hosts.").arg(question.host.toHtmlEscaped()));
    box.setInformativeText(
        tr("The server presents the key with fingerprint\n\n%1\n\nCompare it with the node's own "
           "(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the node) before you trust it.")
            .arg(question.fingerprint));
    box.setTextInteractionFlags(Qt::TextSelectableByMouse);
    QPushButton* trust = box.addButton(tr("Trust and remember"), QMessageBox::AcceptRole);
    trust->setObjectName(kTrustButtonName);
    QPushButton* refuse = box.addButton(tr("Refuse"), QMessageBox::RejectRole);
    refuse->setObjectName(kRefuseButtonName);
    box.setDefaultButton(refuse);
    box.setEscapeButton(refuse);
    box.exec();
    if (box.clickedButton() == trust)
        return QStringLiteral("trust");
    return std::nullopt;
}

std::optional<QString> HostKeyPrompter::askSecret(const Question& question) {
    QInputDialog dialog(m_dialogParent);
    dialog.setObjectName(kSecretDialogName);
    dialog.setWindowTitle(question.kind == Kind::Passphrase ? tr("Key passphrase") : tr("SSH password"));
    dialog.setLabelText(question.prompt);
    dialog.setTextEchoMode(QLineEdit::Password);
    dialog.setInputMode(QInputDialog::TextInput);
    if (dialog.exec() != QDialog::Accepted)
        return std::nullopt;
    return dialog.textValue();
}

std::function<bool(const QString&, const QString&)> HostKeyPrompter::hostKeyCallback() const {
    return [shared = m_shared](const QString& host, const QString& fingerprint) {
        return ask(shared, Question{Kind::HostKey, host, fingerprint, QString()}).has_value();
    };
}

std::function<std::optional<QString>(const QString&)> HostKeyPrompter::passphraseCallback() const {
    return [shared = m_shared](const QString& prompt) {
        return ask(shared, Question{Kind::Passphrase, QString(), QString(), prompt});
    };
}

std::function<std::optional<QString>(const QString&)> HostKeyPrompter::passwordCallback() const {
    return [shared = m_shared](const QString& prompt) {
        return ask(shared, Question{Kind::Password, QString(), QString(), prompt});
    };
}

void HostKeyPrompter::install(remote::ConnectionOptions& options) const {
    options.confirmUnknownHost = hostKeyCallback();
    options.passphrase = passphraseCallback();
    options.password = passwordCallback();
}

void HostKeyPrompter::install(remote::EngineOptions& options) const {
    options.confirmUnknownHost = hostKeyCallback();
    options.passphrase = passphraseCallback();
    options.password = passwordCallback();
}

} // namespace rankscope::gui
