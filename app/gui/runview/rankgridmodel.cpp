// SPDX-License-Identifier: MIT
#include "rankgridmodel.h"

#include <cmath>

namespace rankscope::gui {

QColor rankStateColor(RankLiveState state) {
    switch (state) {
    case RankLiveState::Starting:
        return QColor(0xb8, 0xc4, 0xd6);
    case RankLiveState::Running:
        return QColor(0x8f, 0xd1, 0x9e);
    case RankLiveState::Slow:
        return QColor(0xf5, 0xd0, 0x6f);
    case RankLiveState::Diverged:
        return QColor(0xe3, 0x8f, 0xc9);
    case RankLiveState::Hung:
        return QColor(0xf0, 0x9a, 0x5a);
    case RankLiveState::Failed:
        return QColor(0xe5, 0x73, 0x73);
    case RankLiveState::Lost:
        return QColor(0xa8, 0xa8, 0xa8);
    case RankLiveState::Finished:
        return QColor(0x9c, 0xc3, 0xe6);
    case RankLiveState::Stopped:
        return QColor(0xc9, 0xbf, 0xe0);
    }
    return {};
}

RankGridModel::RankGridModel(QObject* parent) : QAbstractTableModel(parent) {}

int RankGridModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int RankGridModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RankGridModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case RankColumn:
        return tr("Rank");
    case HostColumn:
        return tr("Host");
    case StateColumn:
        return tr("State");
    case StepColumn:
        return tr("Step");
    case LossColumn:
        return tr("Loss");
    case HeartbeatColumn:
        return tr("Last heartbeat");
    default:
        return {};
    }
}

QVariant RankGridModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RankLiveStatus* status = m_tracker.rank(m_rows[index.row()]);
    if (!status)
        return {};
    switch (role) {
    case Qt::DisplayRole:
        return display(*status, index.column());
    case SortRole:
        return sortValue(*status, index.column());
    case StateRole:
        return int(status->state);
    case RankRole:
        return status->rank;
    case Qt::BackgroundRole:
        return rankStateColor(status->state);
    case Qt::ToolTipRole:
        return status->reason.isEmpty() ? QVariant() : QVariant(status->reason);
    case Qt::TextAlignmentRole:
        return index.column() == HostColumn || index.column() == StateColumn
                   ? QVariant(int(Qt::AlignLeft | Qt::AlignVCenter))
                   : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    default:
        return {};
    }
}

QVariant RankGridModel::display(const RankLiveStatus& status, int column) const {
    switch (column) {
    case RankColumn:
        return QString::number(status.rank);
    case HostColumn:
        return status.host;
    case StateColumn:
        // Among ranks that all failed, the one the run's root cause names is told apart, or the ranks that failed
        // alike (a shared cause, where who came first by milliseconds says nothing).
        if (status.state == RankLiveState::Failed && status.diagnosisKey == QLatin1String("root-cause"))
            return status.diagnosisCulprits > 1 ? tr("failed alike") : tr("failed first");
        // A straggler that ran to the end: finished, and the one the others waited for.
        if (status.state == RankLiveState::Finished && status.diagnosisKey.startsWith(QLatin1String("straggler")))
            return tr("finished, slow");
        // A diverged replica may train on, or have ended; a hung rank stays hung when the teardown ends it.
        if (status.state == RankLiveState::Diverged)
            return status.ending == RankEnding::Finished  ? tr("diverged, finished")
                   : status.ending == RankEnding::Stopped ? tr("diverged, stopped")
                                                          : tr("diverged, running");
        if (status.state == RankLiveState::Hung && status.ending == RankEnding::Stopped)
            return tr("hung, stopped");
        return rankLiveStateName(status.state);
    case StepColumn:
        return QString::number(status.step);
    case LossColumn:
        return status.loss ? QString::number(*status.loss, 'f', 4) : QString();
    case HeartbeatColumn: {
        if (!status.lastHeartbeat)
            return QString();
        const double age = std::max(0.0, m_now - *status.lastHeartbeat);
        return age < 10.0 ? tr("%1 s ago").arg(age, 0, 'f', 1) : tr("%1 s ago").arg(qRound64(age));
    }
    default:
        return {};
    }
}

// Missing values sort as NaN/empty, never as a number that means something.
QVariant RankGridModel::sortValue(const RankLiveStatus& status, int column) const {
    switch (column) {
    case RankColumn:
        return status.rank;
    case HostColumn:
        return status.host;
    case StateColumn:
        return int(status.state);
    case StepColumn:
        return status.step;
    case LossColumn:
        return status.loss ? QVariant(*status.loss) : QVariant();
    case HeartbeatColumn:
        return status.lastHeartbeat ? QVariant(*status.lastHeartbeat) : QVariant();
    default:
        return {};
    }
}

// New ranks are appended in one insertion.
void RankGridModel::syncRows() {
    QVector<int> added;
    for (auto it = m_tracker.ranks().cbegin(); it != m_tracker.ranks().cend(); ++it) {
        if (!m_rows.contains(it.key()))
            added.append(it.key());
    }
    if (added.isEmpty())
        return;
    const int first = int(m_rows.size());
    beginInsertRows({}, first, first + int(added.size()) - 1);
    m_rows += added;
    endInsertRows();
}

void RankGridModel::emitAllChanged() {
    if (!m_rows.isEmpty())
        emit dataChanged(index(0, 0), index(int(m_rows.size()) - 1, ColumnCount - 1));
}

void RankGridModel::addEvents(const QVector<TrainerEvent>& events) {
    if (events.isEmpty())
        return;
    const int before = int(m_rows.size());
    m_tracker.addEvents(events);
    m_tracker.update(std::max(m_now, m_tracker.newestTime()));
    syncRows();
    if (before > 0)
        emit dataChanged(index(0, 0), index(before - 1, ColumnCount - 1));
}

void RankGridModel::rankExited(int rank, const QString& host, int status, bool stopped) {
    const int before = int(m_rows.size());
    m_tracker.rankExited(rank, status, host, stopped);
    syncRows();
    if (const int row = rowOfRank(rank); row >= 0 && row < before)
        emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

void RankGridModel::setRankHosts(const QHash<int, QString>& hosts) {
    m_tracker.setRankHosts(hosts);
    emitAllChanged();
}

void RankGridModel::addDiagnoses(const QVector<Diagnosis>& diagnoses) {
    const int before = int(m_rows.size());
    m_tracker.applyDiagnoses(diagnoses);
    syncRows();
    // Reasons change with findings even where states do not (the ranks waiting on a hung one).
    if (before > 0)
        emit dataChanged(index(0, 0), index(before - 1, ColumnCount - 1));
}

void RankGridModel::setNow(double now) {
    m_now = now;
    m_tracker.update(now);
    emitAllChanged();
}

void RankGridModel::setOptions(const RankStatusOptions& options) {
    m_tracker.setOptions(options);
    m_tracker.update(std::max(m_now, m_tracker.newestTime()));
    emitAllChanged();
}

void RankGridModel::clear() {
    beginResetModel();
    m_tracker.clear();
    m_rows.clear();
    endResetModel();
}

} // namespace rankscope::gui
