// SPDX-License-Identifier: MIT
#include "clusterpanel.h"

#include "hostkeyprompter.h"
#include "nodedialogs.h"
#include "nodetablemodel.h"

#include "core/hostfile.h"
#include "core/sshconfig.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>

namespace rankscope::gui {

namespace {

using remote::CheckVerdict;
using remote::NodeCheck;
using remote::VerdictLevel;

QString verdictColor(VerdictLevel level) {
    switch (level) {
    case VerdictLevel::Ok:
        return QStringLiteral("#2e7d32");
    case VerdictLevel::Warn:
        return QStringLiteral("#ef8f00");
    case VerdictLevel::Fail:
        return QStringLiteral("#c62828");
    }
    return {};
}

} // namespace

ClusterPanel::ClusterPanel(QWidget* parent)
    : QWidget(parent), m_model(new NodeTableModel(this)), m_prompter(new HostKeyPrompter(this, this)),
      m_sshConfigPath(QDir::home().filePath(QStringLiteral(".ssh/config"))) {
    qRegisterMetaType<remote::NodeCheck>();
    qRegisterMetaType<remote::ClusterCheckResult>();

    auto* add = new QPushButton(tr("Add node…"));
    connect(add, &QPushButton::clicked, this, &ClusterPanel::addNodeByHand);
    auto* fromConfig = new QPushButton(tr("From ~/.ssh/config…"));
    connect(fromConfig, &QPushButton::clicked, this, &ClusterPanel::addFromSshConfig);
    auto* hostfile = new QPushButton(tr("Import hostfile…"));
    connect(hostfile, &QPushButton::clicked, this, &ClusterPanel::chooseHostfile);
    m_remove = new QPushButton(tr("Remove"));
    connect(m_remove, &QPushButton::clicked, this, &ClusterPanel::removeSelected);
    m_check = new QPushButton(tr("Check"));
    m_check->setObjectName(QStringLiteral("check"));
    m_check->setToolTip(tr("Connect to every node and check it: OS, GPUs, LibTorch, disk, interfaces, master port"));
    connect(m_check, &QPushButton::clicked, this, [this] {
        QString error;
        if (!startCheck(&error))
            setStatus(error, true);
    });
    auto* buttons = new QHBoxLayout;
    for (QPushButton* button : {add, fromConfig, hostfile, m_remove})
        buttons->addWidget(button);
    buttons->addStretch();
    buttons->addWidget(m_check);

    m_table = new QTableView;
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->hide();
    // Room for four nodes before it scrolls, whatever the splitter gives the panel (and a narrow window's
    // horizontal scroll bar takes).
    m_table->setMinimumHeight(m_table->horizontalHeader()->sizeHint().height() +
                              4 * m_table->verticalHeader()->defaultSectionSize() + 2 * m_table->frameWidth() +
                              m_table->horizontalScrollBar()->sizeHint().height());
    QHeaderView* header = m_table->horizontalHeader();
    header->setStretchLastSection(true);
    for (int column = NodeTableModel::Name; column <= NodeTableModel::State; ++column)
        header->setSectionResizeMode(column, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(NodeTableModel::Summary, QHeaderView::Interactive);
    header->setSectionResizeMode(NodeTableModel::Cause, QHeaderView::Interactive);
    header->resizeSection(NodeTableModel::Summary, 330);
    header->resizeSection(NodeTableModel::Cause, 300);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        updateButtons();
        showDetails();
    });
    connect(m_model, &NodeTableModel::dataChanged, this, &ClusterPanel::showDetails);
    connect(m_model, &NodeTableModel::modelReset, this, &ClusterPanel::showDetails);
    connect(m_model, &NodeTableModel::rowsRemoved, this, &ClusterPanel::showDetails);
    connect(m_model, &NodeTableModel::nodesEdited, this, [this] {
        updateButtons();
        emit nodesEdited();
    });

    m_details = new QLabel;
    m_details->setObjectName(QStringLiteral("details"));
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_details->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_details->setMinimumHeight(60);
    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("status"));

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(m_table, 2);
    layout->addWidget(m_details, 1);
    layout->addWidget(m_status);
    updateButtons();
    showDetails();
    setStatus(tr("Add nodes, then Check them."));
}

ClusterPanel::~ClusterPanel() {
    // A node thread waiting on a question must get its answer before ClusterCheck's destructor joins it.
    m_prompter->cancel(true);
    m_running.reset();
}

void ClusterPanel::setJob(const JobSpec& job) {
    m_model->setJob(job);
    updateButtons();
    // The hint says what to do next; a check's outcome stays until the next check.
    if (!isChecking() && m_checkedNodes.isEmpty())
        setStatus(m_model->rowCount() == 0 ? tr("Add nodes, then Check them.")
                                           : tr("%n node(s): Check them before a run.", "", m_model->rowCount()));
}

JobSpec ClusterPanel::job() const {
    return m_model->job();
}

void ClusterPanel::addNodes(const QVector<NodeSpec>& nodes) {
    m_model->addNodes(nodes);
}

QStringList ClusterPanel::hosts() const {
    QStringList hosts;
    for (const NodeSpec& node : m_model->nodes())
        hosts << node.host;
    return hosts;
}

bool ClusterPanel::importHostfile(const QString& path, QString* error) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error)
            *error = tr("cannot read %1: %2").arg(path, file.errorString());
        return false;
    }
    const HostfileResult result = parseHostfile(file.readAll());
    const QStringList existing = hosts();
    QVector<NodeSpec> fresh;
    for (const NodeSpec& node : result.nodes) { // each named by its host, as a node in the job file is
        if (!existing.contains(node.host))
            fresh << node;
    }
    addNodes(fresh);
    setStatus(tr("%n node(s) imported from %1", nullptr, static_cast<int>(fresh.size())).arg(path));
    if (result.ok())
        return true;
    if (error) {
        QStringList lines;
        for (const JobIssue& issue : result.issues)
            lines << issue.toString();
        *error = lines.join(QLatin1Char('\n'));
    }
    return false;
}

void ClusterPanel::addSshConfigHosts(const QStringList& aliases) {
    QVector<NodeSpec> nodes;
    for (const QString& alias : aliases) {
        NodeSpec node;
        node.host = alias;
        node.name = alias;
        nodes << node;
    }
    addNodes(nodes);
}

void ClusterPanel::addNodeByHand() {
    NodeDialog dialog(m_model->job(), this);
    if (dialog.exec() == QDialog::Accepted)
        addNodes({dialog.node()});
}

void ClusterPanel::addFromSshConfig() {
    SshHostsDialog dialog(sshConfigHosts(m_sshConfigPath), hosts(), this);
    if (dialog.exec() == QDialog::Accepted)
        addSshConfigHosts(dialog.chosen());
}

void ClusterPanel::chooseHostfile() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import hostfile"));
    QString error;
    if (!path.isEmpty() && !importHostfile(path, &error))
        QMessageBox::warning(this, tr("Import hostfile"), error);
}

void ClusterPanel::removeSelected() {
    QList<int> rows;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows())
        rows << index.row();
    m_model->removeNodes(rows);
}

bool ClusterPanel::startCheck(QString* error) {
    if (isChecking()) {
        if (error)
            *error = tr("a check is already running");
        return false;
    }
    // The last check's threads are done (no question of theirs waits), so this does not wait.
    remote::ConnectionOptions options = m_options;
    m_prompter->install(options);
    auto check = std::make_unique<remote::ClusterCheck>(options);
    connect(check.get(), &remote::ClusterCheck::nodeChecked, this, &ClusterPanel::onNodeChecked);
    connect(check.get(), &remote::ClusterCheck::finished, this, &ClusterPanel::onCheckFinished);
    QString why;
    if (!check->start(m_model->job(), RunMode::Submit, &why)) {
        if (error)
            *error = why;
        return false; // the last check's rows and outcome stand
    }
    m_running = std::move(check); // its results come queued, after this
    m_checkedNodes = m_model->nodes();
    m_model->setChecking();
    setStatus(tr("Checking %n node(s)…", nullptr, static_cast<int>(m_checkedNodes.size())));
    updateButtons();
    return true;
}

bool ClusterPanel::isChecking() const {
    return m_running && m_running->isRunning();
}

QString ClusterPanel::statusText() const {
    return m_status->text();
}

void ClusterPanel::onNodeChecked(const NodeCheck& check) {
    if (m_model->nodes() != m_checkedNodes)
        return; // the nodes changed since the check started: its rows are not these
    m_model->setCheckResult(check);
}

void ClusterPanel::onCheckFinished(const remote::ClusterCheckResult& result) {
    if (m_model->nodes() == m_checkedNodes) {
        for (const NodeCheck& node : result.nodes)
            m_model->setCheckResult(node); // every node's verdicts, the cross-node ones included
    }
    int failed = 0;
    for (const NodeCheck& node : result.nodes)
        failed += node.level() == VerdictLevel::Fail ? 1 : 0;
    if (failed == 0)
        setStatus(tr("All %n node(s) passed the pre-flight.", nullptr, static_cast<int>(result.nodes.size())));
    else
        setStatus(tr("%1 of %2 node(s) failed the pre-flight.").arg(failed).arg(result.nodes.size()), true);
    updateButtons();
    emit checkFinished(result);
}

void ClusterPanel::showDetails() {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    const int row = rows.isEmpty() ? -1 : rows.front().row();
    if (row < 0 || row >= m_model->rowCount() || !m_model->checkResult(row)) {
        // Before any check there is nothing to see: the node table takes the room.
        bool anyChecked = false;
        for (int r = 0; r < m_model->rowCount() && !anyChecked; ++r)
            anyChecked = m_model->checkResult(r).has_value();
        m_details->setText(tr("<i>Select a checked node to see every finding.</i>"));
        m_details->setVisible(anyChecked);
        return;
    }
    m_details->setVisible(true);
    const NodeCheck& check = *m_model->checkResult(row);
    QString html = QStringLiteral("<b>%1</b> (%2)<br>").arg(check.name.toHtmlEscaped(), check.host.toHtmlEscaped());
    for (const CheckVerdict& verdict : check.verdicts) {
        html += QStringLiteral("<span style='color:%1'>%2</span> <b>%3</b>: %4")
                    .arg(verdictColor(verdict.level), remote::verdictLevelName(verdict.level),
                         verdict.item.toHtmlEscaped(), verdict.message.toHtmlEscaped());
        if (!verdict.fix.isEmpty()) // the fixes are the warnings' and failures'
            html += QStringLiteral("<br>&nbsp;&nbsp;&nbsp;fix: %1").arg(verdict.fix.toHtmlEscaped());
        html += QStringLiteral("<br>");
    }
    m_details->setText(html);
}

void ClusterPanel::updateButtons() {
    m_remove->setEnabled(!isChecking() && m_table->selectionModel()->hasSelection());
    m_check->setEnabled(!isChecking() && m_model->rowCount() > 0);
}

void ClusterPanel::setStatus(const QString& text, bool error) {
    m_status->setText(text);
    m_status->setStyleSheet(error ? QStringLiteral("QLabel { color: #c62828; }") : QString());
}

} // namespace rankscope::gui
