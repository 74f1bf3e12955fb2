// SPDX-License-Identifier: MIT
#include "logview/logfilterproxy.h"

#include "logview/logmodel.h"

namespace rankscope::gui {

LogFilterProxy::LogFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(LogModel::SortRole);
    setDynamicSortFilter(true);
}

void LogFilterProxy::setRanks(const QSet<int>& ranks) {
    if (ranks == m_ranks)
        return;
    m_ranks = ranks;
    invalidateFilter();
}

void LogFilterProxy::setMinimumSeverity(LogSeverity severity) {
    if (severity == m_minimumSeverity)
        return;
    m_minimumSeverity = severity;
    invalidateFilter();
}

void LogFilterProxy::setPattern(const QString& pattern) {
    QRegularExpression expression(pattern, QRegularExpression::CaseInsensitiveOption);
    QString error;
    if (!expression.isValid()) {
        error = tr("%1 at position %2").arg(expression.errorString()).arg(expression.patternErrorOffset());
    }
    const bool active = error.isEmpty() && !pattern.isEmpty();
    const bool changed = active != m_patternActive || (active && pattern != m_pattern.pattern());
    m_pattern = expression;
    m_patternActive = active;
    if (error != m_patternError) {
        m_patternError = error;
        Q_EMIT patternErrorChanged(m_patternError);
    }
    if (changed)
        invalidateFilter();
}

void LogFilterProxy::setNcclOnly(bool ncclOnly) {
    if (ncclOnly == m_ncclOnly)
        return;
    m_ncclOnly = ncclOnly;
    invalidateFilter();
}

bool LogFilterProxy::isFiltering() const {
    return !m_ranks.isEmpty() || m_minimumSeverity > LogSeverity::Debug || m_patternActive || m_ncclOnly;
}

bool LogFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    // The common source is a LogModel: read its rows directly rather than through QVariants.
    if (const auto* log = qobject_cast<const LogModel*>(sourceModel()); log && !sourceParent.isValid()) {
        const LogModel::Line& line = log->line(sourceRow);
        return (m_ranks.isEmpty() || m_ranks.contains(line.rank)) && line.severity >= m_minimumSeverity &&
               (!m_ncclOnly || line.nccl) && (!m_patternActive || m_pattern.match(line.text).hasMatch());
    }
    const QModelIndex index = sourceModel()->index(sourceRow, LogModel::TextColumn, sourceParent);
    return (m_ranks.isEmpty() || m_ranks.contains(index.data(LogModel::RankRole).toInt())) &&
           index.data(LogModel::SeverityRole).toInt() >= int(m_minimumSeverity) &&
           (!m_ncclOnly || index.data(LogModel::NcclRole).toBool()) &&
           (!m_patternActive || m_pattern.match(index.data(LogModel::TextRole).toString()).hasMatch());
}

} // namespace rankscope::gui
