// SPDX-License-Identifier: MIT
#include "nodetablemodel.h"

#include "core/preflight.h"

#include <QColor>
#include <QLocale>

#include <algorithm>

namespace rankscope::gui {

namespace {

using remote::NodeCheck;
using remote::VerdictLevel;

QColor stateColor(NodeTableModel::NodeState state) {
    switch (state) {
    case NodeTableModel::NodeState::Unknown:
        return QColor(0x9e, 0x9e, 0x9e);
    case NodeTableModel::NodeState::Checking:
        return QColor(0x1e, 0x88, 0xe5);
    case NodeTableModel::NodeState::Ready:
        return QColor(0x2e, 0x7d, 0x32);
    case NodeTableModel::NodeState::Warning:
        return QColor(0xef, 0x8f, 0x00);
    case NodeTableModel::NodeState::Failed:
        return QColor(0xc6, 0x28, 0x28);
    }
    return {};
}

// The verdict a row's cause and fix come from: the first failing one, else the first warning.
const remote::CheckVerdict* worstVerdict(const NodeCheck& check) {
    for (const VerdictLevel level : {VerdictLevel::Fail, VerdictLevel::Warn})
        for (const remote::CheckVerdict& verdict : check.verdicts)
            if (verdict.level == level)
                return &verdict;
    return nullptr;
}

bool sameConnection(const NodeSpec& a, const NodeSpec& b) {
    return a.host == b.host && a.port == b.port && a.user == b.user && a.identityFile == b.identityFile &&
           a.workDir == b.workDir;
}

} // namespace

NodeTableModel::NodeTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void NodeTableModel::setJob(const JobSpec& job) {
    if (job.nodes == m_job.nodes) {
        m_job = job;
        return;
    }
    beginResetModel();
    m_job = job;
    m_rows = QVector<Row>(m_job.nodes.size());
    endResetModel();
}

void NodeTableModel::addNodes(const QVector<NodeSpec>& nodes) {
    if (nodes.isEmpty())
        return;
    const int first = static_cast<int>(m_job.nodes.size());
    beginInsertRows({}, first, first + static_cast<int>(nodes.size()) - 1);
    m_job.nodes += nodes;
    m_rows.resize(m_job.nodes.size());
    endInsertRows();
    emit nodesEdited();
}

void NodeTableModel::removeNodes(QList<int> rows) {
    std::sort(rows.begin(), rows.end(), std::greater<int>());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    bool removed = false;
    for (const int row : std::as_const(rows)) {
        if (row < 0 || row >= rowCount())
            continue;
        beginRemoveRows({}, row, row);
        m_job.nodes.remove(row);
        m_rows.remove(row);
        endRemoveRows();
        removed = true;
    }
    if (removed)
        emit nodesEdited();
}

bool NodeTableModel::removeRows(int row, int count, const QModelIndex& parent) {
    if (parent.isValid() || row < 0 || count <= 0 || row + count > rowCount())
        return false;
    QList<int> rows;
    for (int i = row; i < row + count; ++i)
        rows << i;
    removeNodes(rows);
    return true;
}

void NodeTableModel::setChecking() {
    for (Row& row : m_rows) {
        row.state = NodeState::Checking;
        row.check.reset();
    }
    if (rowCount() > 0)
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

void NodeTableModel::clearChecks() {
    for (Row& row : m_rows)
        row = Row();
    if (rowCount() > 0)
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

void NodeTableModel::setCheckResult(const NodeCheck& check) {
    if (check.index < 0 || check.index >= rowCount())
        return;
    Row& row = m_rows[check.index];
    row.check = check;
    switch (check.level()) {
    case VerdictLevel::Ok:
        row.state = NodeState::Ready;
        break;
    case VerdictLevel::Warn:
        row.state = NodeState::Warning;
        break;
    case VerdictLevel::Fail:
        row.state = NodeState::Failed;
        break;
    }
    emit dataChanged(index(check.index, 0), index(check.index, ColumnCount - 1));
}

NodeTableModel::NodeState NodeTableModel::state(int row) const {
    return m_rows.value(row).state;
}

const std::optional<NodeCheck>& NodeTableModel::checkResult(int row) const {
    return m_rows[row].check;
}

QString NodeTableModel::stateName(NodeState state) {
    switch (state) {
    case NodeState::Unknown:
        return QStringLiteral("unknown");
    case NodeState::Checking:
        return QStringLiteral("checking");
    case NodeState::Ready:
        return QStringLiteral("ready");
    case NodeState::Warning:
        return QStringLiteral("warning");
    case NodeState::Failed:
        return QStringLiteral("failed");
    }
    return {};
}

int NodeTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_job.nodes.size());
}

int NodeTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant NodeTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Name:
        return tr("Name");
    case Host:
        return tr("Host");
    case Port:
        return tr("Port");
    case User:
        return tr("User");
    case Gpus:
        return tr("GPUs");
    case Procs:
        return tr("Procs");
    case State:
        return tr("State");
    case Summary:
        return tr("Pre-flight");
    case Cause:
        return tr("Cause");
    case Fix:
        return tr("Fix");
    }
    return {};
}

Qt::ItemFlags NodeTableModel::flags(const QModelIndex& index) const {
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags result = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (index.column() <= Procs)
        result |= Qt::ItemIsEditable;
    return result;
}

QVariant NodeTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const int row = index.row();
    const int column = index.column();
    const NodeState rowState = m_rows[row].state;
    switch (role) {
    case Qt::DisplayRole:
        return display(row, column);
    case Qt::EditRole:
    case SortRole:
        return sortValue(row, column);
    case StateRole:
        return static_cast<int>(rowState);
    case Qt::DecorationRole:
        return column == State ? QVariant(stateColor(rowState)) : QVariant();
    case Qt::ForegroundRole:
        if (column == State || (column == Cause && rowState == NodeState::Failed))
            return stateColor(rowState);
        if (column == Port && m_job.nodes[row].port == 0)
            return QColor(Qt::gray);
        return {};
    case Qt::ToolTipRole:
        if (column == Cause || column == Fix || column == Summary) {
            const QString text = display(row, column).toString();
            return text.isEmpty() ? QVariant() : QVariant(text);
        }
        return {};
    case Qt::TextAlignmentRole:
        if (column == Port || column == Gpus || column == Procs)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    default:
        return {};
    }
}

QVariant NodeTableModel::display(int row, int column) const {
    const NodeSpec& node = m_job.nodes[row];
    switch (column) {
    case Name:
        return node.name.isEmpty() ? node.host : node.name;
    case Host:
        return node.host;
    case Port:
        return node.port > 0 ? QString::number(node.port) : tr("default");
    case User:
        return node.user;
    case Gpus:
        return node.gpus;
    case Procs:
        return node.effectiveProcs();
    case State:
        return stateName(m_rows[row].state);
    case Summary:
        return summary(row);
    case Cause:
        return cause(row);
    case Fix:
        return fix(row);
    }
    return {};
}

QVariant NodeTableModel::sortValue(int row, int column) const {
    const NodeSpec& node = m_job.nodes[row];
    switch (column) {
    case Name:
        return node.name;
    case Host:
        return node.host;
    case Port:
        return node.port;
    case User:
        return node.user;
    case Gpus:
        return node.gpus;
    case Procs:
        return node.procs;
    case State:
        return static_cast<int>(m_rows[row].state);
    default:
        return display(row, column);
    }
}

// "Debian GNU/Linux 12 x86_64 · 2 GPUs · LibTorch 2.1.0 · 120.5 GB free · eth0 10.0.0.2 · NCCL_SOCKET_IFNAME=eth0"
QString NodeTableModel::summary(int row) const {
    const std::optional<NodeCheck>& check = m_rows[row].check;
    if (!check || !check->reachable)
        return {};
    const ProbeReport& report = check->report;
    QStringList parts;
    parts << QStringLiteral("%1 %2").arg(report.os, report.arch).trimmed();
    parts << (report.gpus.isEmpty() ? tr("no GPU") : tr("%n GPU(s)", nullptr, static_cast<int>(report.gpus.size())));
    const auto torch = std::find_if(report.torch.cbegin(), report.torch.cend(),
                                    [](const TorchInstall& install) { return install.hasConfig; });
    parts << (torch == report.torch.cend()
                  ? tr("no LibTorch")
                  : tr("LibTorch %1").arg(torch->version.isEmpty() ? QStringLiteral("?") : torch->version));
    if (report.diskFreeKb >= 0)
        parts << tr("%1 free").arg(QLocale().formattedDataSize(report.diskFreeKb * 1024, 1,
                                                               QLocale::DataSizeTraditionalFormat));
    QStringList interfaces;
    for (const NetInterface& interface : report.interfaces)
        if (interface.up)
            interfaces << QStringLiteral("%1 %2").arg(interface.name, interface.address);
    if (!interfaces.isEmpty())
        parts << interfaces.join(QStringLiteral(", "));
    const SocketIfnameAdvice advice =
        adviseSocketIfname(report.interfaces, m_job.nodes[row].rendezvousAddress());
    if (!advice.suggestion.isEmpty())
        parts << QStringLiteral("NCCL_SOCKET_IFNAME=%1").arg(advice.suggestion);
    return parts.join(QStringLiteral(" · "));
}

// The real cause: the transport's classification when the node was not reached ("refused: ..."), else the
// worst verdict's message.
QString NodeTableModel::cause(int row) const {
    const std::optional<NodeCheck>& check = m_rows[row].check;
    if (!check || check->level() == VerdictLevel::Ok)
        return {};
    if (!check->reachable && check->errorKind)
        return QStringLiteral("%1: %2").arg(remote::transportErrorKindName(*check->errorKind), check->errorMessage);
    return check->cause();
}

QString NodeTableModel::fix(int row) const {
    const std::optional<NodeCheck>& check = m_rows[row].check;
    if (!check)
        return {};
    const remote::CheckVerdict* verdict = worstVerdict(*check);
    return verdict ? verdict->fix : QString();
}

bool NodeTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return false;
    NodeSpec& node = m_job.nodes[index.row()];
    const NodeSpec before = node;
    bool ok = true;
    switch (index.column()) {
    case Name:
        node.name = value.toString().trimmed();
        break;
    case Host:
        node.host = value.toString().trimmed();
        break;
    case User:
        node.user = value.toString().trimmed();
        break;
    case Port:
        node.port = value.toInt(&ok);
        break;
    case Gpus:
        node.gpus = value.toInt(&ok);
        break;
    case Procs:
        node.procs = value.toInt(&ok);
        break;
    default:
        return false;
    }
    if (!ok) {
        node = before;
        return false;
    }
    if (node == before)
        return true;
    if (!sameConnection(node, before)) {
        m_rows[index.row()] = Row();
    }
    emit dataChanged(this->index(index.row(), 0), this->index(index.row(), ColumnCount - 1));
    emit nodesEdited();
    return true;
}

} // namespace rankscope::gui
