// SPDX-License-Identifier: MIT
#include "nodedialogs.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace rankscope::gui {

namespace {

constexpr int kSpinMaximum = 999'999; // beyond every limit, so that parseJob (not the spin box) says why

QSpinBox* spinBox(const QString& unsetText) {
    auto* spin = new QSpinBox;
    spin->setRange(0, kSpinMaximum);
    spin->setSpecialValueText(unsetText);
    return spin;
}

} // namespace

NodeDialog::NodeDialog(const JobSpec& job, QWidget* parent) : QDialog(parent), m_job(job) {
    setWindowTitle(tr("Add node"));
    m_host = new QLineEdit;
    m_host->setObjectName(QStringLiteral("host"));
    m_host->setPlaceholderText(tr("hostname, IP or ~/.ssh/config alias"));
    m_name = new QLineEdit;
    m_name->setObjectName(QStringLiteral("name"));
    m_name->setPlaceholderText(tr("the host"));
    m_port = spinBox(tr("from ssh config, else 22"));
    m_port->setObjectName(QStringLiteral("port"));
    m_user = new QLineEdit;
    m_user->setObjectName(QStringLiteral("user"));
    m_user->setPlaceholderText(tr("from ssh config, else yours"));
    m_identity = new QLineEdit;
    m_identity->setObjectName(QStringLiteral("identity_file"));
    m_identity->setPlaceholderText(tr("ssh-agent and the default keys"));
    m_address = new QLineEdit;
    m_address->setObjectName(QStringLiteral("address"));
    m_address->setPlaceholderText(tr("the host (what the other nodes use for rendezvous)"));
    m_workDir = new QLineEdit(QString(kDefaultWorkDir));
    m_workDir->setObjectName(QStringLiteral("work_dir"));
    m_gpus = spinBox(tr("none (CPU node)"));
    m_gpus->setObjectName(QStringLiteral("gpus"));
    m_procs = spinBox(tr("one per GPU, else 1"));
    m_procs->setObjectName(QStringLiteral("procs"));
    m_problems = new QLabel;
    m_problems->setObjectName(QStringLiteral("problems"));
    m_problems->setWordWrap(true);
    m_problems->setStyleSheet(QStringLiteral("QLabel { color: #c62828; }"));

    auto* form = new QFormLayout;
    form->addRow(tr("Host"), m_host);
    form->addRow(tr("Name"), m_name);
    form->addRow(tr("Port"), m_port);
    form->addRow(tr("User"), m_user);
    form->addRow(tr("Identity file"), m_identity);
    form->addRow(tr("Address"), m_address);
    form->addRow(tr("Work dir"), m_workDir);
    form->addRow(tr("GPUs"), m_gpus);
    form->addRow(tr("Processes"), m_procs);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_problems);
    layout->addWidget(m_buttons);

    for (QLineEdit* edit : {m_host, m_name, m_user, m_identity, m_address, m_workDir})
        connect(edit, &QLineEdit::textChanged, this, &NodeDialog::validate);
    for (QSpinBox* spin : {m_port, m_gpus, m_procs})
        connect(spin, &QSpinBox::valueChanged, this, &NodeDialog::validate);
    validate();
    resize(480, sizeHint().height());
}

NodeSpec NodeDialog::node() const {
    NodeSpec node;
    node.host = m_host->text().trimmed();
    node.name = m_name->text().trimmed().isEmpty() ? node.host : m_name->text().trimmed();
    node.port = m_port->value();
    node.user = m_user->text().trimmed();
    node.identityFile = m_identity->text().trimmed();
    node.address = m_address->text().trimmed();
    node.workDir = m_workDir->text().trimmed();
    node.gpus = m_gpus->value();
    node.procs = m_procs->value();
    return node;
}

QVector<JobIssue> NodeDialog::nodeIssues(const JobSpec& job, const NodeSpec& node) {
    JobSpec withNode = job;
    withNode.nodes << node;
    QJsonObject json = jobToJson(withNode);
    // The node as typed: an empty work dir must be reported, not replaced by the default.
    if (node.workDir.isEmpty()) {
        QJsonArray nodes = json.value(QStringLiteral("nodes")).toArray();
        QJsonObject last = nodes.last().toObject();
        last.insert(QStringLiteral("work_dir"), QString());
        nodes.replace(nodes.size() - 1, last);
        json.insert(QStringLiteral("nodes"), nodes);
    }
    const QString prefix = QStringLiteral("nodes[%1]").arg(job.nodes.size());
    QVector<JobIssue> issues;
    for (const JobIssue& issue : parseJob(QJsonDocument(json).toJson()).issues)
        if (issue.path.startsWith(prefix + QLatin1Char('.'))) // the node is an object: its issues are its fields'
            issues << issue;
    return issues;
}

void NodeDialog::validate() {
    m_issues = nodeIssues(m_job, node());
    QStringList lines;
    for (const JobIssue& issue : std::as_const(m_issues))
        lines << issue.path.section(QLatin1Char('.'), 1) + QStringLiteral(": ") + issue.message;
    m_problems->setText(lines.join(QLatin1Char('\n')));
    m_problems->setVisible(!lines.isEmpty());
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(m_issues.isEmpty());
}

SshHostsDialog::SshHostsDialog(const QStringList& aliases, const QStringList& existingHosts, QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("Nodes from ~/.ssh/config"));
    m_list = new QListWidget;
    for (const QString& alias : aliases) {
        auto* item = new QListWidgetItem(alias, m_list);
        if (existingHosts.contains(alias)) {
            item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
            item->setText(tr("%1 (already a node)").arg(alias));
            item->setData(Qt::UserRole, QString());
        } else {
            item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
            item->setCheckState(Qt::Unchecked);
            item->setData(Qt::UserRole, alias);
        }
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(aliases.isEmpty() ? tr("No host aliases found.")
                                                   : tr("Tick the hosts to add; their Port, User and "
                                                        "IdentityFile come from the config.")));
    layout->addWidget(m_list);
    layout->addWidget(buttons);
}

QStringList SshHostsDialog::chosen() const {
    QStringList hosts;
    for (int row = 0; row < m_list->count(); ++row) {
        const QListWidgetItem* item = m_list->item(row);
        if (item->checkState() == Qt::Checked && !item->data(Qt::UserRole).toString().isEmpty())
            hosts << item->data(Qt::UserRole).toString();
    }
    return hosts;
}

} // namespace rankscope::gui
