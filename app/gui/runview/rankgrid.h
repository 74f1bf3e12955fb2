// SPDX-License-Identifier: MIT
#pragma once

#include <QListView>

class QSortFilterProxyModel;

namespace rankscope::gui {

class RankGridModel;

// One tile per rank, coloured by state, showing rank, state, host, step and loss; ordered by rank. Tiles
// grow to fill the widget and shrink (dropping the host line) so that 2 to 64 ranks stay legible without
// scrolling in a panel of a few hundred pixels. Clicking a tile emits rankSelected.
class RankGrid final : public QListView {
    Q_OBJECT

public:
    explicit RankGrid(RankGridModel* model, QWidget* parent = nullptr);

    // Outlines a rank's tile; -1 for none.
    void setFocusedRank(int rank);
    [[nodiscard]] int focusedRank() const { return m_focusedRank; }
    // Outlines, dashed, the tile of the rank whose line the pointer is on in the charts; -1 for none.
    void setHoveredRank(int rank);
    [[nodiscard]] int hoveredRank() const { return m_hoveredRank; }
    // The view-space rectangle of a rank's tile (empty when the rank is unknown): for tests and tooltips.
    [[nodiscard]] QRect tileRect(int rank) const;
    [[nodiscard]] QSize tileSize() const { return m_tileSize; }

signals:
    void rankSelected(int rank);
    void rankPointed(int rank); // the pointer went onto a rank's tile; -1 when it left the tiles

protected:
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    void relayoutTiles();

    RankGridModel* m_model;
    QSortFilterProxyModel* m_proxy;
    QSize m_tileSize;
    int m_focusedRank = -1;
    int m_hoveredRank = -1;
    int m_pointedRank = -1; // the tile under the pointer
};

} // namespace rankscope::gui
